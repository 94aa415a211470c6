//go:build !js

package e2e

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// An open output follows its command's live output also after the window changes size: a
// smaller window makes the box shorter, which leaves it above its end without anyone
// scrolling, and that is not the person scrolling away.
func TestOutputFollowsAfterResize(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, m := s.openRunning(t, `i=0; while :; do i=$((i+1)); echo "line $i"; sleep 0.05; done`, 2000)
	box := fmt.Sprintf(`document.querySelector(%q)`, "#output-"+m.ID+" pre.term")
	last := `Number(` + box + `.textContent.trim().split("\n").pop().replace("line ", ""))`
	atEnd := box + `.scrollHeight - ` + box + `.scrollTop - ` + box + `.clientHeight <= 8`
	b.waitFor(t, "the box at its end", "!!"+box+" && "+atEnd)
	for _, size := range [][2]int64{{1280, 500}, {393, 851}} {
		b.do(t, chromedp.EmulateViewport(size[0], size[1]))
		before := eval[int](t, b, last)
		b.waitFor(t, fmt.Sprintf("the newest line in view at %dx%d", size[0], size[1]), fmt.Sprintf(`%s >= %d && %s`, last, before+20, atEnd))
	}
	b.screenshots(t, "output-after-resize", "#output-"+m.ID)
}
