package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"conch/server/store"
	"conch/shared"

	"github.com/valyala/fasthttp"
)

// serve runs one GET through the app's fasthttp handler, without a network.
func serve(b *testing.B, h fasthttp.RequestHandler, target string) []byte {
	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI(target)
	ctx.Request.Header.SetHost("127.0.0.1:8080")
	h(&ctx)
	if code := ctx.Response.StatusCode(); code != fasthttp.StatusOK {
		b.Fatalf("GET %s: %d %s", target, code, ctx.Response.Body())
	}
	return ctx.Response.Body()
}

func fullOutput() *shared.ShellOutput {
	return &shared.ShellOutput{Stdout: strings.Repeat("x", shared.OutputLimit), Stderr: strings.Repeat("e", shared.OutputLimit), ExitCode: intp(1)}
}

// BenchmarkShellOutputSnapshot: the snapshot endpoint for a command holding 256 KiB of
// stdout and 256 KiB of stderr (store read, JSON encoding, Fiber).
func BenchmarkShellOutputSnapshot(b *testing.B) {
	benchSnapshot(b, shared.StatusFailed, fullOutput())
}

// BenchmarkShellOutputSnapshot1KiB: the snapshot endpoint for a command of 1 KiB of
// stdout, answered from the snapshot cache as under load: what each small request costs
// besides the network (the stamp lookup, routing, headers).
func BenchmarkShellOutputSnapshot1KiB(b *testing.B) {
	benchSnapshot(b, shared.StatusCompleted, &shared.ShellOutput{Stdout: strings.Repeat("x", 1<<10), ExitCode: intp(0)})
}

// benchSnapshot serves the snapshot of one command of out, again and again.
func benchSnapshot(b *testing.B, status shared.ToolStatus, out *shared.ShellOutput) {
	e := newEnv(b)
	s := e.session()
	m := e.shell(s.ID, "make", status, out)
	h := e.app.Handler()
	target := "/api/v1/task-sessions/" + s.ID + "/messages/" + m.ID + "/shell-output"
	b.SetBytes(int64(len(serve(b, h, target))))
	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, target)
	}
}

// BenchmarkListShellMessages: a REST page of 40 commands each holding 2 x 256 KiB of
// output, as served (projected), with the size the same page would have with the bodies
// inline (computed here only, from the snapshots).
func BenchmarkListShellMessages(b *testing.B) {
	e := newEnv(b)
	s := e.session()
	var ids []string
	for range 40 {
		ids = append(ids, e.shell(s.ID, "go test ./...", shared.StatusFailed, fullOutput()).ID)
	}
	h := e.app.Handler()
	target := "/api/v1/task-sessions/" + s.ID + "/messages?limit=40"
	projected := append([]byte(nil), serve(b, h, target)...)

	var page struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.Unmarshal(projected, &page); err != nil {
		b.Fatal(err)
	}
	for i, m := range page.Messages {
		var snap shared.ShellOutputSnapshot
		if err := json.Unmarshal(serve(b, h, "/api/v1/task-sessions/"+s.ID+"/messages/"+ids[i]+"/shell-output"), &snap); err != nil {
			b.Fatal(err)
		}
		shell := m["metadata"].(map[string]any)["normalized"].(map[string]any)["shell_exec"].(map[string]any)
		shell["output"] = snap.Output
	}
	inline, err := json.Marshal(page)
	if err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()
	for b.Loop() {
		serve(b, h, target)
	}
	b.ReportMetric(float64(len(projected)), "projected-bytes")
	b.ReportMetric(float64(len(inline)), "inline-bytes")
}

// BenchmarkListAuthoredMessages: a REST page of 100 prompts, unsigned (the token's or a
// server without one) and signed by an account (metadata.author), in bytes per message:
// what the author field costs the list.
func BenchmarkListAuthoredMessages(b *testing.B) {
	for _, c := range []struct{ name, author string }{{"unsigned", ""}, {"signed", "ada.lovelace"}} {
		author := c.author
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			s := e.session()
			for i := range 100 {
				if _, _, _, err := e.store.AddUserMessage(context.Background(), s.ID, fmt.Sprintf("go test ./... -run Test%d", i), "", author); err != nil {
					b.Fatal(err)
				}
			}
			h := e.app.Handler()
			target := "/api/v1/task-sessions/" + s.ID + "/messages?limit=100"
			size := len(serve(b, h, target))
			b.ReportAllocs()
			for b.Loop() {
				serve(b, h, target)
			}
			b.ReportMetric(float64(size)/100, "bytes/message")
		})
	}
}

// BenchmarkListReplies: the REST page of 50 that the UI asks for first, in a session of
// shell commands each followed by the agent's reply, whose tree (metadata.markdown) the
// list carries: a line of text (as make bench seeds them) or markdown (a paragraph with
// code and emphasis, a list, a fenced block).
func BenchmarkListReplies(b *testing.B) {
	for _, c := range []struct{ name, reply string }{
		{"line", "Message %d: the command finished; here is what it printed, in short."},
		{"markdown", "Step %d: the tests **passed**. What changed:\n\n- the parser keeps *ranges*, not copies\n" +
			"- the list reads [the index](https://example.com/i)\n\n```go\nfunc f() error { return nil }\n```\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			s := e.session()
			for i := range 25 {
				e.shell(s.ID, fmt.Sprintf("go test ./pkg%d/...", i), shared.StatusCompleted, &shared.ShellOutput{Stdout: "ok\n", ExitCode: intp(0)})
				if _, err := e.store.CreateMessage(context.Background(), store.NewMessage{SessionID: s.ID,
					AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: fmt.Sprintf(c.reply, i)}); err != nil {
					b.Fatal(err)
				}
			}
			h := e.app.Handler()
			target := "/api/v1/task-sessions/" + s.ID + "/messages?limit=50"
			b.SetBytes(int64(len(serve(b, h, target))))
			b.ReportAllocs()
			for b.Loop() {
				serve(b, h, target)
			}
		})
	}
}
