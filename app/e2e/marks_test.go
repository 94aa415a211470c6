//go:build !js

package e2e

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// The person's own message is shown marked like an agent's: a right-to-left override in
// it shows as ⟨U+202E⟩, so that text cannot display as something else, when it is sent
// and after a reload (the message then comes prerendered, in the boot payload).
func TestOwnMessageMarked(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "own message")
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitLive(t, "Live")
	const sent = "echo x\u202e#gnp.tahc"
	b.do(t, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`const box = document.getElementById("prompt-input");
box.value = %q; box.dispatchEvent(new Event("input", {bubbles: true}));`, sent)))
	b.do(t, chromedp.Click(chromedp.CSS(`.prompt button[type=submit]`)))
	const shown = "echo x⟨U+202E⟩#gnp.tahc"
	const mine = `[...document.querySelectorAll(".msg.user")].map(e => e.textContent)`
	b.waitFor(t, "the sent message, marked", fmt.Sprintf(`%s.includes(%q)`, mine, shown))
	b.waitFor(t, "the command's row, marked", fmt.Sprintf(`[...document.querySelectorAll(".cmd-text")].some(e => e.textContent === %q)`, shown))
	if eval[bool](t, b, fmt.Sprintf(`document.body.innerText.includes(%q)`, "\u202e")) {
		t.Errorf("the page shows the override itself")
	}
	b.screenshots(t, "own-message-marked", ".msg.user")
	b.open(t, s.URL+"/sessions/"+sess.ID)
	b.waitFor(t, "the reloaded message, marked", fmt.Sprintf(`%s.includes(%q)`, mine, shown))
	if eval[bool](t, b, fmt.Sprintf(`document.body.innerText.includes(%q)`, "\u202e")) {
		t.Errorf("after a reload the page shows the override itself")
	}
}
