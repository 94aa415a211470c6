package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
)

// A prompt's files reach the agent as resource_link blocks after the text (a review).
func TestPromptFilesAreResourceLinks(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	sent := &lockedWriter{w: &buf} // what the client sent the agent
	scripts := map[string]script{"review": func(context.Context, *acptest.Agent, sdk.SessionId) error { return nil }}
	env := newEnv(t, pipeLauncher(func(ctx context.Context, in io.Reader, out io.Writer) error {
		return acptest.Run(ctx, io.TeeReader(in, sent), out, acptest.Config{Scripts: scripts})
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	before := len(env.ev.states(sess.ID))
	if err := env.m.Prompt(sess.ID, "", "review", "/w/a.txt", "/w/dir/b c.txt"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, env.ev, "the turn to end", func() bool {
		s := env.ev.states(sess.ID)
		return len(s) > before+1 && s[len(s)-1] != "running"
	})
	sent.mu.Lock()
	defer sent.mu.Unlock()
	var got []sdk.ContentBlock
	for sc := bufio.NewScanner(&buf); sc.Scan(); {
		var req struct {
			Method string
			Params sdk.PromptRequest
		}
		if json.Unmarshal(sc.Bytes(), &req) == nil && req.Method == sdk.AgentMethodSessionPrompt {
			got = req.Params.Prompt
		}
	}
	b, _ := json.Marshal(got)
	want := `[{"text":"review","type":"text"},{"name":"a.txt","type":"resource_link","uri":"file:///w/a.txt"},` +
		`{"name":"b c.txt","type":"resource_link","uri":"file:///w/dir/b%20c.txt"}]`
	if string(b) != want {
		t.Errorf("prompt sent\n got %s\nwant %s", b, want)
	}
}
