//go:build !js

package e2e

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// markdownReply is what the scripted agent answers "markdown" with: what agents write.
const markdownReply = "I created **hello.py** with a `greet` function and ~~no~~ tests.\n\n" +
	"## What changed\n\n" +
	"1. Added `greet(name)`\n2. Wired it into *main*\n\n" +
	"- [x] write the function\n- [ ] document it\n\n" +
	"| file | lines | status |\n|:--|--:|:-:|\n| hello.py | 12 | new |\n| README.md | 3 | edited |\n\n" +
	"```python\ndef greet(name):\n    return f\"Hello, {name}!\"\n```\n\n" +
	"See [the Python docs](https://docs.python.org/3/tutorial/) or [this](javascript:alert(1)); " +
	"![a chart](https://tracker.example/pixel.png)"

// An agent's markdown is drawn as such in the browser: emphasis, lists, a table, a code
// block with its copy button, a safe link opening in a new tab; no image is requested.
func TestMarkdownReply(t *testing.T) {
	t.Parallel()
	s, sess, b := openScripted(t, "markdown")
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := s.API.SendMessage(ctx, sess.ID, "markdown", ""); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the reply's table", `!!document.querySelector(".msg.agent .md table")`)
	for what, js := range map[string]string{
		"bold":        `document.querySelector(".msg.agent .md strong").textContent === "hello.py"`,
		"code span":   `document.querySelector(".msg.agent .md p code").textContent === "greet"`,
		"list":        `document.querySelectorAll(".msg.agent .md ol li").length === 2`,
		"code block":  `document.querySelector(".msg.agent .md-pre").textContent.startsWith("def greet(name):")`,
		"copy button": `document.querySelector(".msg.agent .md-code button").textContent === "Copy code"`,
		"link":        `(a => a.href === "https://docs.python.org/3/tutorial/" && a.target === "_blank" && a.rel === "noopener noreferrer")(document.querySelector(".msg.agent .md a"))`,
		"two links":   `document.querySelectorAll(".msg.agent .md a").length === 2`,
		"no image":    `document.querySelectorAll("img").length === 0`,
		"no raw text": `!document.querySelector(".msg.agent").textContent.includes("**")`,
	} {
		if !eval[bool](t, b, js) {
			t.Errorf("%s: %s is false", what, js)
		}
	}
	b.shots(t, "markdown", ".msg.agent .md table")

	// The server's prerender of the page (app.wasm blocked) draws the same markup: elements,
	// attributes, text (its spacing aside). go-app's prerender writes an attribute whose
	// value is "true" with no value, so aria-hidden counts by its presence.
	shape := `(function shape(e) {
		return [...e.childNodes].map(n => n.nodeType === 3 ? n.textContent.replace(/\s+/g, " ").trim() :
			"<" + n.tagName + [...n.attributes].map(a => " " + a.name + (a.name === "aria-hidden" ? "" : "=" + a.value)).sort().join("") +
			">" + shape(n) + "</>").join("")
	})(document.querySelector(".msg.agent .md"))`
	live := eval[string](t, b, shape)
	p := newBrowser(t)
	send(t, p, network.Enable, network.EnableParams{})
	send(t, p, network.SetBlockedURLs, network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{{URLPattern: "*://*:*/web/app.wasm", Block: true}}})
	p.do(t, chromedp.Navigate(s.URL+"/sessions/"+sess.ID))
	p.waitFor(t, "the prerendered reply", `document.readyState === "complete" && !!document.querySelector(".msg.agent .md table")`)
	if got := eval[string](t, p, shape); got != live {
		t.Errorf("the prerendered reply differs from the app's:\n%s\n%s", got, live)
	}
}
