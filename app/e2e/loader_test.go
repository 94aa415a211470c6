//go:build !js

package e2e

import (
	"fmt"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
)

// While app.wasm loads, a session page shows its prerendered messages and a small
// "Loading Conch…" pill just above the sticky prompt bar: not over it or the last
// message, and not floating away from it, on a desktop and on a phone, in light and dark.
func TestLoadingPillAbovePrompt(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "loading pill")
	for i := range 3 {
		s.run(t, sess.ID, fmt.Sprintf("seq 1 %d", 10*(i+1)), nil)
	}
	b := newBrowser(t)
	// app.wasm never arrives: its request stays paused, so the page stays as it loads.
	send(t, b, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*app.wasm*"}}})
	b.do(t, chromedp.Navigate(s.URL+"/sessions/"+sess.ID))
	pill := `document.getElementById("app-wasm-loader")`
	b.waitFor(t, "the loading pill", fmt.Sprintf(`!!%s && %s.textContent.includes("Loading Conch")`, pill, pill))
	b.screenshots(t, "loading-pill", "")
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 900}, {"phone", 393, 851}} {
		b.do(t, chromedp.EmulateViewport(size.width, size.height))
		gap := eval[float64](t, b, fmt.Sprintf(`document.querySelector(".prompt").getBoundingClientRect().top - %s.getBoundingClientRect().bottom`, pill))
		if gap < 4 || gap > 24 {
			t.Errorf("%s: the pill ends %.0f px above the prompt bar, want 4 to 24", size.name, gap)
		}
		if cover := eval[float64](t, b, fmt.Sprintf(`[...document.querySelectorAll(".messages .msg")].pop().getBoundingClientRect().bottom - %s.getBoundingClientRect().top`, pill)); cover > 0 {
			t.Errorf("%s: the pill covers the last message by %.0f px", size.name, cover)
		}
		centre := eval[float64](t, b, fmt.Sprintf(`(r => r.left + r.width / 2)(%s.getBoundingClientRect()) - (r => r.left + r.width / 2)(document.querySelector(".prompt").getBoundingClientRect())`, pill))
		if centre < -2 || centre > 2 {
			t.Errorf("%s: the pill's centre is %.0f px off the prompt bar's", size.name, centre)
		}
	}
}
