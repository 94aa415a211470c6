//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// With CONCH_E2E_AGENT=elicit the test binary plays an agent whose "ask" turn asks the
// person a form question and says what it got back; its "sign in" turn asks the person
// to visit a page and completes the question itself (elicitation/complete) once the FIFO
// named by CONCH_E2E_DONE is written to, as an agent does when the page's step is done.
func init() {
	if os.Getenv("CONCH_E2E_AGENT") != "elicit" {
		return
	}
	form := acptest.Form("Which release should I tag?", map[string]any{
		"version": map[string]any{"type": "string", "title": "Version", "description": "Semantic version, without the v", "maxLength": 20},
		"channel": map[string]any{"type": "string", "title": "Channel", "enum": []any{"stable", "beta"}},
		"notes":   map[string]any{"type": "boolean", "title": "Write release notes", "default": true},
		"checks": map[string]any{"type": "array", "title": "Checks to run", "description": "At most two: each takes a while", "maxItems": 2,
			"default": []any{"test"}, "items": map[string]any{"anyOf": []any{map[string]any{"const": "lint", "title": "Lint"},
				map[string]any{"const": "test", "title": "Unit tests"}, map[string]any{"const": "race", "title": "Race detector"}}}},
	}, "version")
	url := sdk.NewUnstableCreateElicitationRequestUrl("sign-in-1", "https://example.test/device?code=WDJB-MJHT")
	url.Url.Message = "Sign in to the registry to publish"
	done := func(context.Context) error { // blocks until the test writes
		f, err := os.Open(os.Getenv("CONCH_E2E_DONE"))
		if err == nil {
			err = f.Close()
		}
		return err
	}
	scripts := map[string]acptest.Script{"ask": acptest.Elicit(form), "sign in": acptest.ElicitCompleted(url, done)}
	if err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: scripts}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// A person answers an agent's form question in the browser: the form shows a labelled
// input per field and a checkbox per option of a multi-select, a missing required field
// and too many ticked boxes are refused on the page, and the answer reaches the agent,
// which says what it got; the row then shows who answered what. A page to visit that
// the agent completes itself stops asking and says so.
func TestElicitationAnsweredInTheBrowser(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "done")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{{"name": "asker", "command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "elicit", "CONCH_E2E_DONE": fifo},
		"sandbox": map[string]any{"read": []string{dir}}}}) // the agent's sandbox lets it open the FIFO
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	sess := s.sessionOf(t, "tag a release", "asker")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	if _, err := s.API.SendMessage(ctx, sess.ID, "ask", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the question's form", `!!document.querySelector(".elic .elic-accept")`)
	if got := b.text(t, ".elic .elic-form"); !strings.Contains(got, "Version *") || !strings.Contains(got, "Channel") || !strings.Contains(got, "Write release notes") ||
		!strings.Contains(got, "Checks to runAt most two: each takes a whileLintUnit testsRace detector") {
		t.Errorf("form %q, want its four labels and the three options", got)
	}
	if got := eval[[]bool](t, b, `[...document.querySelectorAll('.elic [data-field="checks"] input')].map(e => e.checked)`); fmt.Sprint(got) != "[false true false]" {
		t.Errorf("boxes ticked %v, want the default Unit tests", got)
	}
	b.screenshots(t, "elicitation", ".elic")
	b.do(t, chromedp.EmulateViewport(1280, 900))

	b.do(t, chromedp.Click(".elic .elic-accept"))
	b.waitFor(t, "the refusal of an empty version", `(document.querySelector(".elic .perm-error") || {textContent: ""}).textContent === "Version is required."`)
	b.do(t, chromedp.SendKeys(`.elic [data-field="version"] input`, "2.4.0"),
		chromedp.SetValue(`.elic [data-field="channel"] select`, "beta"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('.elic [data-field="channel"] select').dispatchEvent(new Event("change"))`),
		chromedp.Click(`.elic [data-field="checks"] label:nth-child(3)`), chromedp.Click(`.elic [data-field="checks"] label:nth-child(1)`),
		chromedp.Click(".elic .elic-accept"))
	b.waitFor(t, "the refusal of three checks", `(document.querySelector(".elic .perm-error") || {textContent: ""}).textContent === "Checks to run takes at most 2 of its options."`)
	b.do(t, chromedp.Click(`.elic [data-field="checks"] label:nth-child(1) input`), chromedp.Click(".elic .elic-accept"))
	want := `got {"action":"accept","content":{"channel":"beta","checks":["test","race"],"notes":true,"version":"2.4.0"}}`
	b.waitFor(t, "the agent's reply", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].some(e => e.textContent.includes(%q))`, want))
	if got := b.text(t, ".elic .perm-label"); got != "Accepted" {
		t.Errorf("label %q, want Accepted", got)
	}
	if got := b.text(t, ".elic .elic-answer"); got != "ChannelbetaChecks to runUnit tests, Race detectorWrite release notesyesVersion2.4.0" {
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

	b.do(t, chromedp.EmulateViewport(1280, 900))
	if _, err := s.API.SendMessage(ctx, sess.ID, "sign in", ""); err != nil {
		t.Fatal(err)
	}
	page2 := `document.querySelectorAll(".elic")[1]`
	b.waitFor(t, "the page to visit", fmt.Sprintf(`!!%s && !!%[1]s.querySelector(".elic-accept")`, page2))
	b.screenshots(t, "elicitation-url", ".elic.perm-pending")
	b.do(t, chromedp.EmulateViewport(1280, 900))
	signalFIFO(t, fifo) // the agent hears the page's step is done
	b.waitFor(t, "the page's question completed", fmt.Sprintf(`%s.classList.contains("perm-completed") && !%[1]s.querySelector("button")`, page2))
	if got := eval[string](t, b, page2+`.querySelector(".perm-label").textContent`); got != "Done: the agent says the step on its page is complete" {
		t.Errorf("label %q", got)
	}
	b.waitFor(t, "the agent's reply", `[...document.querySelectorAll(".msg.agent")].some(e => e.textContent.includes('got {"action":"accept"}'))`)
	b.screenshots(t, "elicitation-url-completed", ".elic.perm-completed")
	tasks, err := s.API.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if task.NeedsAttention {
			t.Errorf("task %s needs attention after the question completed", task.ID)
		}
	}
}

// signalFIFO opens the FIFO for writing and closes it, which ends the reader's wait; it
// fails the test if no reader opens it within the deadline (open blocks until one does).
func signalFIFO(t *testing.T, path string) {
	t.Helper()
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			err = f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadline):
		t.Fatalf("no reader opened %s within %s", path, deadline)
	}
}
