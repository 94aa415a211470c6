package api

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"conch/shared"
)

// png is the start of a PNG file: enough for its type to be read from the bytes.
const png = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

// upload posts data as a file named name, claiming the type claimed.
func (e *env) upload(status int, sessionID, name, claimed, data string, out any) string {
	e.t.Helper()
	return e.expect(status, "POST", "/api/v1/task-sessions/"+sessionID+"/attachments?name="+url.QueryEscape(name), data, out,
		"Content-Type", claimed)
}

// A file's type is read from its bytes, not from what the uploader claims; an agent that
// takes images and files gets both, and the prompt lists them (summaries, no body); each
// is fetched as what it is, never as a page of this site.
func TestAttachmentsSniffedAndListed(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	if _, err := e.store.SetPromptCapabilities(context.Background(), sess.ID, shared.PromptCapabilities{Image: true, EmbeddedContext: true}); err != nil {
		t.Fatal(err)
	}
	var img, page, blob shared.Attachment
	e.upload(http.StatusCreated, sess.ID, `C:\shots\dot.txt`, "text/plain", png, &img)
	e.upload(http.StatusCreated, sess.ID, "page.png", "image/png", "<html><script>alert(1)</script>", &page)
	e.upload(http.StatusCreated, sess.ID, "x.txt", "text/plain", "\x00\x01latin\xe9", &blob)
	for _, c := range []struct {
		got            shared.Attachment
		name, mimeType string
		size           int
	}{{img, "dot.txt", "image/png", len(png)}, {page, "page.png", "text/html", 31}, {blob, "x.txt", "application/octet-stream", 8}} {
		if c.got.ID == "" || c.got.Name != c.name || c.got.MimeType != c.mimeType || c.got.Size != c.size {
			t.Errorf("stored %+v, want %s %s %d bytes", c.got, c.name, c.mimeType, c.size)
		}
	}
	var msg shared.Message
	e.expect(http.StatusAccepted, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages",
		`{"content":"look","attachments":["`+page.ID+`","`+img.ID+`"]}`, &msg)
	if got := msg.Metadata; got == nil || len(got.Attachments) != 2 || got.Attachments[0] != page || got.Attachments[1] != img {
		t.Fatalf("the prompt lists %+v", got)
	}
	for _, c := range []struct {
		a                              shared.Attachment
		contentType, disposition, body string
	}{
		{img, "image/png", "", png},
		{page, "text/plain; charset=utf-8", "", "<html><script>alert(1)</script>"},
		{blob, "application/octet-stream", `attachment; filename="` + blob.ID + `"`, "\x00\x01latin\xe9"},
	} {
		resp, body := e.do("GET", "/api/v1/task-sessions/"+sess.ID+"/attachments/"+c.a.ID, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != c.contentType ||
			resp.Header.Get("Content-Disposition") != c.disposition || body != c.body {
			t.Errorf("GET %s: %d %q %q %q", c.a.Name, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), body)
		}
	}
	// A file goes with one prompt only.
	e.expect(http.StatusNotFound, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages", `{"content":"again","attachments":["`+img.ID+`"]}`, nil)
	// A prompt may be a file alone, never blank text alone.
	var alone shared.Message
	e.expect(http.StatusAccepted, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages", `{"attachments":["`+blob.ID+`"]}`, &alone)
	if alone.Content != "" || alone.Metadata == nil || len(alone.Metadata.Attachments) != 1 || alone.Metadata.Attachments[0] != blob {
		t.Errorf("a prompt of a file alone: %q %+v", alone.Content, alone.Metadata)
	}
	e.expect(http.StatusBadRequest, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages", `{"content":" \n","attachments":[]}`, nil)
}

// What the agent cannot take is refused with a 400 that says so, before it is stored;
// an agent that never said (nil capabilities) takes no file at all.
func TestAttachmentsTheAgentCannotTake(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	if raw := e.upload(http.StatusBadRequest, sess.ID, "a.txt", "text/plain", "hello", nil); !strings.Contains(raw, "This agent takes no files.") {
		t.Errorf("a file for an agent that never said: %s", raw)
	}
	if _, err := e.store.SetPromptCapabilities(context.Background(), sess.ID, shared.PromptCapabilities{EmbeddedContext: true}); err != nil {
		t.Fatal(err)
	}
	if raw := e.upload(http.StatusBadRequest, sess.ID, "dot.png", "image/png", png, nil); !strings.Contains(raw, "dot.png (image/png): This agent takes no images.") {
		t.Errorf("an image for an agent without images: %s", raw)
	}
	var text shared.Attachment
	e.upload(http.StatusCreated, sess.ID, "a.txt", "text/plain", "hello", &text)
	// The agent changed (a new start said less): the prompt is refused, and nothing stored.
	if _, err := e.store.SetPromptCapabilities(context.Background(), sess.ID, shared.PromptCapabilities{}); err != nil {
		t.Fatal(err)
	}
	before := e.messageCount(sess.ID)
	if raw := e.expect(http.StatusBadRequest, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages",
		`{"content":"look","attachments":["`+text.ID+`"]}`, nil); !strings.Contains(raw, "a.txt: This agent takes no files.") {
		t.Errorf("a prompt with a file the agent no longer takes: %s", raw)
	}
	if e.messageCount(sess.ID) != before {
		t.Error("a refused prompt was stored")
	}
}

// Bounds: the size of a file (over the server's body limit too), its name, the files a
// prompt carries and those a session holds unsent; an unknown id, another session's, or
// one given twice is not found, and the prompt is not stored.
func TestAttachmentBounds(t *testing.T) {
	e := newEnv(t)
	sess, other := e.session(), e.session()
	for _, s := range []string{sess.ID, other.ID} {
		if _, err := e.store.SetPromptCapabilities(context.Background(), s, shared.PromptCapabilities{Image: true, EmbeddedContext: true}); err != nil {
			t.Fatal(err)
		}
	}
	big := strings.Repeat("a", shared.MaxAttachmentBytes+1)
	if raw := e.upload(http.StatusBadRequest, sess.ID, "big.txt", "text/plain", big, nil); !strings.Contains(raw, `"code":"too_large"`) {
		t.Errorf("a file over the bound: %s", raw)
	}
	var whole shared.Attachment
	e.upload(http.StatusCreated, sess.ID, "whole.txt", "text/plain", big[1:], &whole) // over the 1 MiB body limit of other routes
	if raw := e.expect(http.StatusBadRequest, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages", `{"content":"`+big[:2<<20]+`"}`, nil); !strings.Contains(raw, `"code":"too_large"`) {
		t.Errorf("a prompt over the body limit: %.200s", raw)
	}
	e.upload(http.StatusBadRequest, sess.ID, "", "text/plain", "x", nil)
	e.upload(http.StatusBadRequest, sess.ID, strings.Repeat("n", shared.MaxAttachmentName+1), "text/plain", "x", nil)
	e.upload(http.StatusBadRequest, sess.ID, "empty.txt", "text/plain", "", nil)
	e.upload(http.StatusNotFound, "no-such-session", "a.txt", "text/plain", "x", nil)

	var theirs shared.Attachment
	e.upload(http.StatusCreated, other.ID, "theirs.txt", "text/plain", "x", &theirs)
	before := e.messageCount(sess.ID)
	for _, ids := range []string{`"no-such-file"`, `"` + theirs.ID + `"`, `"` + whole.ID + `","` + whole.ID + `"`} {
		e.expect(http.StatusNotFound, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages", `{"content":"look","attachments":[`+ids+`]}`, nil)
	}
	e.expect(http.StatusNotFound, "GET", "/api/v1/task-sessions/"+sess.ID+"/attachments/"+theirs.ID, "", nil)
	ids := make([]string, shared.MaxAttachments+1)
	for i := range ids {
		var a shared.Attachment
		e.upload(http.StatusCreated, sess.ID, "f.txt", "text/plain", "x", &a)
		ids[i] = `"` + a.ID + `"`
	}
	e.expect(http.StatusBadRequest, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages", `{"content":"look","attachments":[`+strings.Join(ids, ",")+`]}`, nil)
	if e.messageCount(sess.ID) != before {
		t.Error("a refused prompt was stored")
	}
	// Pending: whole and the files of the refused prompt; the refused uploads stored nothing.
	for range shared.MaxPendingAttachments - 1 - len(ids) {
		e.upload(http.StatusCreated, sess.ID, "f.txt", "text/plain", "x", nil)
	}
	if raw := e.upload(http.StatusBadRequest, sess.ID, "f.txt", "text/plain", "x", nil); !strings.Contains(raw, "not sent yet") {
		t.Errorf("a file over the pending bound: %s", raw)
	}
}

// messageCount is how many messages the session holds.
func (e *env) messageCount(sessionID string) int {
	e.t.Helper()
	page, err := e.store.ListMessages(context.Background(), shared.ListRequest{SessionID: sessionID, Limit: new(shared.MaxPageLimit)})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(page.Messages)
}
