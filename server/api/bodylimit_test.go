package api

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

// TestBodiesAreReadOnlyUpToTheirRoutesLimit sends requests on raw connections, so that a
// body can be stated and not sent: a server that read an import's body before its role
// check would wait for bytes that never come.
func TestBodiesAreReadOnlyUpToTheirRoutesLimit(t *testing.T) {
	e := newEnv(t, withToken)
	addr := e.listen()
	send := func(head, body string) (*http.Response, string) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A deadline for a missing answer only: each answer comes before the body is whole.
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.WriteString(conn, head+"\r\n"+body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer before the body was whole: %v", err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		return resp, string(text)
	}
	request := func(method, path string, header ...string) string {
		return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\n%s", method, path, addr, strings.Join(header, ""))
	}
	auth := "Authorization: Bearer " + token + "\r\n"

	// Without a token, an import of 8 MiB is refused after its first 16 KiB (fasthttp reads
	// 8 KiB ahead).
	resp, text := send(request("POST", "/api/v1/tasks/import", "Content-Length: 8388608\r\n"), strings.Repeat("x", 16<<10))
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Errorf("an import without a token: %d %s, closed %v", resp.StatusCode, text, resp.Close)
	}
	// With one, a stated length over the archive limit is refused after the read ahead.
	resp, text = send(request("POST", "/api/v1/tasks/import", auth, fmt.Sprintf("Content-Length: %d\r\n", shared.MaxImportBytes+1)), strings.Repeat("x", 16<<10))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(text, "an archive is at most 32 MiB") || !resp.Close {
		t.Errorf("an archive over the limit: %d %s, closed %v", resp.StatusCode, text, resp.Close)
	}
	// A chunked body states no length: another route reads it up to the server's limit.
	chunk := strings.Repeat("y", 64<<10)
	var body strings.Builder
	for range (DefaultBodyLimit / len(chunk)) + 2 {
		fmt.Fprintf(&body, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	resp, text = send(request("POST", "/api/v1/tasks", auth, "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"), body.String())
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(text, `"code":"too_large"`) || !resp.Close {
		t.Errorf("a chunked body over the limit: %d %s, closed %v", resp.StatusCode, text, resp.Close)
	}
	// A chunked body within the limit is read whole, and the connection kept.
	json := `{"title":"chunked"}`
	resp, text = send(request("POST", "/api/v1/tasks", auth, "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"),
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(json), json))
	if resp.StatusCode != http.StatusCreated || !strings.Contains(text, `"title":"chunked"`) || resp.Close {
		t.Errorf("a chunked body within the limit: %d %s, closed %v", resp.StatusCode, text, resp.Close)
	}
}
