package acp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
)

// A prompt's attachments reach the agent after its text, in the prompt's order: an image
// as an ACP image block, text as an embedded text resource, anything else as a blob; and
// the session knows what its agent takes.
func TestPromptAttachmentsAreBlocks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []sdk.ContentBlock
	cfg := acptest.Config{
		Scripts: map[string]script{"look": nothing, "": nothing}, // "": a prompt of files alone
		Prompt:  sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
		OnPrompt: func(p sdk.PromptRequest) {
			mu.Lock()
			got = p.Prompt
			mu.Unlock()
		},
	}
	env := newEnv(t, scriptedAs(cfg), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	if c := sess.PromptCapabilities; c == nil || !c.Image || !c.EmbeddedContext {
		t.Fatalf("the session's prompt capabilities: %+v", c)
	}
	ctx := context.Background()
	var ids []string
	for _, f := range []struct{ name, mime, data string }{
		{"notes.txt", "text/plain", "first line\nsecond"},
		{"dot.png", "image/png", "\x89PNG\r\n\x1a\nrest"},
		{"x.bin", "application/octet-stream", "\x00\x01\x02"},
	} {
		a, err := env.st.CreateAttachment(ctx, sess.ID, f.name, f.mime, []byte(f.data))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	env.prompt(t, sess.ID, "look", ids[1], ids[0], ids[2])
	mu.Lock()
	b, _ := json.Marshal(got)
	want := `[{"text":"look","type":"text"},{"data":"iVBORw0KGgpyZXN0","mimeType":"image/png","type":"image"},` +
		`{"resource":{"mimeType":"text/plain","text":"first line\nsecond","uri":"attachment://` + ids[0] + `/notes.txt"},"type":"resource"},` +
		`{"resource":{"blob":"AAEC","mimeType":"application/octet-stream","uri":"attachment://` + ids[2] + `/x.bin"},"type":"resource"}]`
	if string(b) != want {
		t.Errorf("prompt sent\n got %s\nwant %s", b, want)
	}
	mu.Unlock()

	// Files alone: no empty text block before them.
	a, err := env.st.CreateAttachment(ctx, sess.ID, "dot.png", "image/png", []byte("\x89PNG\r\n\x1a\nrest"))
	if err != nil {
		t.Fatal(err)
	}
	env.prompt(t, sess.ID, "", a.ID)
	mu.Lock()
	defer mu.Unlock()
	b, _ = json.Marshal(got)
	if want := `[{"data":"iVBORw0KGgpyZXN0","mimeType":"image/png","type":"image"}]`; string(b) != want {
		t.Errorf("files alone sent\n got %s\nwant %s", b, want)
	}
}

func nothing(context.Context, *acptest.Agent, sdk.SessionId) error { return nil }
