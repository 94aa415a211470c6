//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"conch/server/acp/acptest"
	"conch/shared"
)

// With CONCH_E2E_AGENT=elicit the test binary plays an agent whose "ask" turn asks the
// person a form question and says what it got back.
func init() {
	if os.Getenv("CONCH_E2E_AGENT") != "elicit" {
		return
	}
	form := acptest.Form("Which release should I tag?", map[string]any{
		"version": map[string]any{"type": "string", "title": "Version", "description": "Semantic version, without the v", "maxLength": 20},
		"channel": map[string]any{"type": "string", "title": "Channel", "enum": []any{"stable", "beta"}},
		"notes":   map[string]any{"type": "boolean", "title": "Write release notes", "default": true},
	}, "version")
	scripts := map[string]acptest.Script{"ask": acptest.Elicit(form)}
	if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: scripts}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// A person answers an agent's form question in the browser: the form shows a labelled
// input per field, a missing required field is refused on the page, and the answer
// reaches the agent, which says what it got; the row then shows who answered what.
func TestElicitationAnsweredInTheBrowser(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{{"name": "asker", "command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "elicit"}}})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	sess := s.sessionOf(t, "tag a release", "asker")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	if _, err := s.API.SendMessage(ctx, sess.ID, "ask", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the question's form", `!!document.querySelector(".elic .elic-accept")`)
	if got := b.text(t, ".elic .elic-form"); !strings.Contains(got, "Version *") || !strings.Contains(got, "Channel") || !strings.Contains(got, "Write release notes") {
		t.Errorf("form %q, want its three labels", got)
	}
	b.screenshots(t, "elicitation", ".elic")
	b.do(t, chromedp.EmulateViewport(1280, 900))

	b.do(t, chromedp.Click(".elic .elic-accept"))
	b.waitFor(t, "the refusal of an empty version", `(document.querySelector(".elic .perm-error") || {textContent: ""}).textContent === "Version is required."`)
	b.do(t, chromedp.SendKeys(`.elic [data-field="version"] input`, "2.4.0"),
		chromedp.SetValue(`.elic [data-field="channel"] select`, "beta"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('.elic [data-field="channel"] select').dispatchEvent(new Event("change"))`),
		chromedp.Click(".elic .elic-accept"))
	want := `got {"action":"accept","content":{"channel":"beta","notes":true,"version":"2.4.0"}}`
	b.waitFor(t, "the agent's reply", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].some(e => e.textContent.includes(%q))`, want))
	if got := b.text(t, ".elic .perm-label"); got != "Accepted" {
		t.Errorf("label %q, want Accepted", got)
	}
	if got := b.text(t, ".elic .elic-answer"); got != "ChannelbetaWrite release notesyesVersion2.4.0" {
		t.Errorf("answer shown %q", got)
	}
	b.screenshots(t, "elicitation-answered", ".elic")
	page, err := s.API.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		if m.Type == shared.TypeElicitation && m.Metadata.Status != shared.StatusSelected {
			t.Errorf("stored question %+v", m.Metadata)
		}
	}
}
