//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
)

// init lets the test binary play an agent that takes images and files
// (CONCH_E2E_AGENT=attach): "received" answers with what the prompt carried.
func init() {
	if os.Getenv("CONCH_E2E_AGENT") != "attach" {
		return
	}
	err := acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{
		Scripts: map[string]acptest.Script{"received": acptest.Received, "": acptest.Received}, // "": files alone
		Prompt:  sdk.PromptCapabilities{Image: true, EmbeddedContext: true}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// onePixel is a 1×1 PNG.
var onePixel = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

// A person picks an image and a text file; the prompt carries them to the agent as an
// image and an embedded text; the sent prompt shows them, each opening on click. The
// shell agent takes neither, and the prompt box says so.
func TestAttachFiles(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, _ := startProfilesServer(t, []map[string]any{{"name": "attacher", "command": exe, "env": map[string]string{"CONCH_E2E_AGENT": "attach"}}})
	sess := s.sessionOf(t, "a task with files", "attacher")
	dir := t.TempDir()
	img, notes := filepath.Join(dir, "dot.png"), filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(img, onePixel, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("first line\nsecond line\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	b.do(t, chromedp.SetUploadFiles(chromedp.CSS("#attach-input"), []string{img, notes}))
	b.waitFor(t, "two chips", `document.querySelectorAll(".pending-files .file-chip").length === 2`)
	b.screenshots(t, "attach-pending", ".prompt")
	b.do(t, chromedp.SendKeys(chromedp.CSS("#prompt-input"), "received"),
		chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
	want := fmt.Sprintf("received: image image/png %d bytes; text notes.txt text/plain: first line", len(onePixel))
	b.waitFor(t, "the agent's answer", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].some(e => e.textContent.trim() === %q)`, want))
	b.waitFor(t, "no chips left", `document.querySelectorAll(".pending-files .file-chip").length === 0`)

	chips := `document.querySelectorAll(".msg.user .sent-files button.file-chip")`
	b.waitFor(t, "the sent prompt's files", chips+`.length === 2`)
	b.do(t, chromedp.Evaluate[chromedp.Void](chips+`[0].click()`))
	b.waitFor(t, "the image", `(i => i && i.complete && i.naturalWidth === 1)(document.querySelector(".msg.user img.file-image"))`)
	b.screenshots(t, "attach-sent-image", ".msg.user")
	b.do(t, chromedp.Evaluate[chromedp.Void](chips+`[1].click()`))
	b.waitFor(t, "the text", `(p => p && p.textContent === "first line\nsecond line\n")(document.querySelector(".msg.user pre.file-text"))`)
	b.screenshots(t, "attach-sent-text", ".msg.user")

	// A pasted screenshot alone is a prompt too.
	b.do(t, chromedp.SetUploadFiles(chromedp.CSS("#attach-input"), []string{img}))
	b.waitFor(t, "one chip", `document.querySelectorAll(".pending-files .file-chip").length === 1`)
	b.do(t, chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
	alone := fmt.Sprintf("received: image image/png %d bytes", len(onePixel))
	b.waitFor(t, "the answer to the file alone", fmt.Sprintf(`[...document.querySelectorAll(".msg.agent")].some(e => e.textContent.trim() === %q)`, alone))
	b.waitFor(t, "the file alone, sent without a text bubble", `(m => m.length === 2 && !m[1].querySelector(".bubble") && m[1].querySelectorAll(".sent-files button.file-chip").length === 1)(document.querySelectorAll(".msg.user"))`)
	b.screenshots(t, "attach-sent-alone", ".msg.user:not(:has(.bubble))")

	shell := s.session(t, "a shell task")
	b.open(t, s.URL+"/sessions/"+shell.ID)
	b.waitLive(t, "Live")
	b.waitFor(t, "what the shell agent cannot take", `document.querySelector(".attach-note").textContent === "This agent takes no images or files." && !document.querySelector(".attach-button")`)
	b.screenshots(t, "attach-refused", ".prompt")
}
