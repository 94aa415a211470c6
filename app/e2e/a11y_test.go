//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// axePath is axe-core's browser build, which `make axe` (a step of `make test`) installs.
var axePath = filepath.Join("..", "..", ".cache", "axe", "node_modules", "axe-core", "axe.min.js")

// axeViolation is one rule axe-core found broken, with the elements that break it.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"` // CSS selectors, each with axe's summary of the fix
}

// The session page with outputs open (a finished command's and a running one's) and the
// task list have no critical or serious accessibility violation by axe-core's rules, in
// light and dark colours, at desktop and phone sizes.
func TestAccessibility(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	b, m, out := s.openFinished(t, colourCommand)
	running := s.run(t, m.SessionID, `echo started; sleep 30`, func(m shared.Message) bool {
		return m.Metadata.Status == shared.StatusRunning && shared.ShellOf(m).Output.StdoutBytes > 0
	})
	button := row(running.ID) + " button.disclosure-toggle"
	b.waitFor(t, "the running command's disclosure", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the running command's transcript", fmt.Sprintf(`!!document.querySelector("#output-%s pre.stdout")`, running.ID))
	if b.text(t, out) == "" {
		t.Fatal("the finished command's output closed")
	}
	b.checkAxe(t, "session page")

	b.do(t, chromedp.Navigate(s.URL+"/"))
	b.waitFor(t, "the task list", `!document.getElementById("app-wasm-loader") && !!document.querySelector("a[href^='/sessions/']")`)
	b.checkAxe(t, "task list")
}

// programColour tells whether an element axe names is text a command drew in one of the 240
// fixed colours of the 256-colour palette (or a 24-bit colour, drawn as its nearest entry):
// the program chose that colour, and the transcript shows it as a terminal would. The 16
// theme colours, which Conch chooses, are checked.
const programColour = `
function programColour(target) {
  const m = /\.t-f(\d+)$/.exec(target[target.length - 1]);
  return !!m && Number(m[1]) >= 16;
}`

// checkAxe injects axe-core's source into the page and runs it in each size and colour
// scheme, failing on every critical or serious violation. It is evaluated through DevTools
// (Runtime.evaluate), which the page's Content-Security-Policy does not govern.
func (b *browser) checkAxe(t *testing.T, page string) {
	t.Helper()
	axe, err := os.ReadFile(axePath)
	if err != nil {
		t.Fatalf("axe-core is not installed (make axe installs it): %v", err)
	}
	b.do(t, chromedp.Evaluate[chromedp.Void](string(axe)+programColour))
	for _, size := range []struct {
		name string
		view chromedp.Action[chromedp.Void]
	}{
		{"desktop", chromedp.EmulateViewport(1280, 900)},
		{"phone", chromedp.EmulateViewport(393, 851, chromedp.EmulateScale(2.75), chromedp.EmulateMobile)},
	} {
		b.do(t, size.view)
		for _, scheme := range []string{"light", "dark"} {
			b.scheme(t, scheme)
			found := eval[[]axeViolation](t, b, `axe.run(document, {resultTypes: ["violations"]}).then(r =>
  r.violations.filter(v => v.impact === "critical" || v.impact === "serious").map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.filter(n => !(v.id === "color-contrast" && programColour(n.target))).
      map(n => n.target.join(" ") + ": " + n.failureSummary.replace(/\s+/g, " "))})).filter(v => v.nodes.length > 0))`)
			for _, v := range found {
				t.Errorf("%s, %s %s: %s %s (%s):\n  %s", page, size.name, scheme, v.Impact, v.ID, v.Help, strings.Join(v.Nodes, "\n  "))
			}
		}
	}
	b.scheme(t, "")
}

// Every output disclosure is found by its role and its name: what it shows or hides,
// then its visible label whole ("Show command output: Output · 8.7 KB", by
// axe's label-in-name rule), as a screen reader, speech input or a script sees it.
func TestDisclosuresByRoleAndName(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	sess := s.session(t, "disclosure names")
	s.run(t, sess.ID, "echo a little output", nil)
	long := s.run(t, sess.ID, "seq 1 3000; exit 3", nil)
	b := newBrowser(t)
	b.open(t, s.URL+"/sessions/"+sess.ID)
	button := row(long.ID) + " button.disclosure-toggle"
	b.waitFor(t, "both disclosures", `document.querySelectorAll("button.disclosure-toggle").length === 2`)
	if n := b.findDisclosures(t); n != 2 {
		t.Fatalf("%d disclosures found by role and name, want 2", n)
	}
	b.do(t, chromedp.Click(chromedp.CSS(button)))
	b.waitFor(t, "the open transcript", fmt.Sprintf(`!!document.querySelector("#output-%s pre.stdout")`, long.ID))
	if n := b.findDisclosures(t); n != 2 {
		t.Fatalf("%d disclosures found by role and name with one open, want 2", n)
	}
}

// findDisclosures finds every disclosure button of the page in the accessibility tree by
// its role and the name its visible label and state give it, and returns how many it found.
func (b *browser) findDisclosures(t *testing.T) int {
	t.Helper()
	type toggle struct {
		Label   string `json:"label"`
		Open    bool   `json:"open"`
		Command bool   `json:"command"`
	}
	toggles := eval[[]toggle](t, b, `[...document.querySelectorAll("button.disclosure-toggle")].map(e => ({
		label: e.textContent, open: e.getAttribute("aria-expanded") === "true", command: !!e.closest(".cmd")}))`)
	for _, d := range toggles {
		verb, subject := "Show ", "tool content"
		if d.Open {
			verb = "Hide "
		}
		if d.Command {
			subject = "command output"
		}
		name := verb + subject + ": " + d.Label
		if n := b.named(t, "button", name); n != 1 {
			t.Errorf("%d buttons named %q, want 1", n, name)
		}
	}
	return len(toggles)
}

// named counts the elements the accessibility tree exposes with this role and name.
func (b *browser) named(t *testing.T, role, name string) int {
	t.Helper()
	n := 0
	b.do(t, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		// The body by object, not DOM.getDocument: that would reset the node ids chromedp
		// keeps for its own queries.
		body, err := cdp.Call(ctx, tg, runtime.Evaluate, runtime.EvaluateParams{Expression: "document.body"})
		if err != nil {
			return err
		}
		found, err := cdp.Call(ctx, tg, accessibility.QueryAXTree,
			accessibility.QueryAXTreeParams{ObjectID: body.Result.ObjectID, AccessibleName: name, Role: role})
		if err != nil {
			return err
		}
		for _, node := range found.Nodes {
			if !node.Ignored {
				n++
			}
		}
		return nil
	}))
	return n
}
