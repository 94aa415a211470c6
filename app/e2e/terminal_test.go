//go:build !js

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// screenHas is the JavaScript that says whether the terminal's screen shows text (its
// rows joined by newlines).
func screenHas(text string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(".xterm-rows > div")].map((r) => r.textContent).join("\n").includes(%q)`, text)
}

// typeLine types a command line into the terminal, as a keyboard's text and its Enter
// key, and waits until the screen shows what it printed.
func (b *browser) typeLine(t *testing.T, line, shows string) {
	t.Helper()
	b.do(t, chromedp.Focus(chromedp.CSS(".xterm-helper-textarea")))
	send(t, b, input.InsertText, input.InsertTextParams{Text: line})
	for _, kind := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
		send(t, b, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: kind, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13})
	}
	b.waitFor(t, "the terminal to show "+shows, screenHas(shows))
}

// The terminal: a member types ls, make and a failing command in a browser; each becomes
// a command of the session with its exit code, whose output opens on demand in the
// session page after a reload. A viewer sees the same screen live and cannot type: the
// page offers no keyboard and the server refuses keys sent anyway; a phone that opens it
// late shows the writer's rows. Screenshots: artifacts/terminal-*.png.
func TestTerminalInTheBrowser(t *testing.T) {
	t.Parallel()
	s := startServerWithToken(t)
	ctx := context.Background()
	if _, err := s.API.CreateAccount(ctx, "root", shared.RoleAdmin, "root's long password"); err != nil {
		t.Fatal(err)
	}
	adaPage, ada := signedIn(t, s, "ada", shared.RoleMember)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\t@echo built it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task, err := ada.CreateTask(ctx, "terminal", "")
	if err != nil {
		t.Fatal(err)
	}
	sess, err := ada.StartSession(ctx, task.ID, "shell", dir)
	if err != nil {
		t.Fatal(err)
	}

	// The session page links to the terminal (a tab of its own).
	adaPage.open(t, s.URL+"/sessions/"+sess.ID)
	adaPage.waitFor(t, "the terminal link", `!!document.querySelector("a.terminal-link")`)
	href := eval[string](t, adaPage, `document.querySelector("a.terminal-link").href`)
	adaPage.do(t, chromedp.Navigate(href))
	adaPage.waitFor(t, "the keyboard", `document.getElementById("term-status").textContent === "You are typing"`)
	adaPage.waitFor(t, "the prompt", screenHas(dir))

	adaPage.typeLine(t, "ls", "Makefile")
	adaPage.typeLine(t, "make", "built it")
	adaPage.typeLine(t, "cat missing.txt", "No such file or directory")

	// A viewer watches the same screen, read only.
	vicPage, vic := signedIn(t, s, "vic", shared.RoleViewer)
	vicPage.do(t, chromedp.Navigate(href))
	vicPage.waitFor(t, "the screen so far", screenHas("built it"))
	vicPage.waitFor(t, "who types", `document.getElementById("term-status").textContent === "Read only · ada is typing"`)
	if eval[bool](t, vicPage, `!document.getElementById("term-take").hidden`) {
		t.Error("a viewer is offered to take the keyboard over")
	}
	refused := eval[string](t, vicPage, `new Promise((resolve) => {
		const ws = new WebSocket("ws://" + location.host + "/ws/terminal?session_id=`+sess.ID+`");
		ws.binaryType = "arraybuffer";
		ws.onmessage = (m) => {
			if (typeof m.data !== "string") return;
			const e = JSON.parse(m.data);
			if (e.type === "writer") ws.send(new TextEncoder().encode("echo typed by vic\r"));
			if (e.type === "error") { resolve(e.reason); ws.close(); }
		};
	})`)
	if !strings.Contains(refused, "take it over first") {
		t.Errorf("the viewer's keys: %q", refused)
	}
	adaPage.typeLine(t, "echo live", "\nlive\n")
	vicPage.waitFor(t, "the live screen", screenHas("echo live"))
	if eval[bool](t, vicPage, screenHas("typed by vic")) {
		t.Error("the viewer's keys reached the shell")
	}

	// The rows: command, exit code, who typed it.
	page, err := vic.ListMessages(ctx, shared.ListRequest{SessionID: sess.ID, Limit: new(shared.MaxPageLimit)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var made shared.Message
	for _, m := range page.Messages {
		se := shared.ShellOf(m)
		if se == nil || m.AuthorType != shared.AuthorUser {
			continue
		}
		exit := "?"
		if se.Output.ExitCode != nil {
			exit = fmt.Sprint(*se.Output.ExitCode)
		}
		got = append(got, fmt.Sprintf("%s %s %s by %s", se.Command, m.Metadata.Status, exit, m.Metadata.Author))
		if se.Command == "make" {
			made = m
		}
	}
	want := []string{"ls completed 0 by ada", "make completed 0 by ada", "cat missing.txt failed 1 by ada", "echo live completed 0 by ada"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows %q, want %q", got, want)
	}

	// After a reload, the session page shows them; the output opens on demand.
	vicPage.open(t, s.URL+"/sessions/"+sess.ID)
	button := row(made.ID) + " button.disclosure-toggle"
	vicPage.waitFor(t, "make's row", fmt.Sprintf(`!!document.querySelector(%q)`, button))
	vicPage.do(t, chromedp.Click(chromedp.CSS(button)))
	vicPage.waitFor(t, "make's output", fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes("built it")`, "#output-"+made.ID))

	// A watcher on a phone that opens the terminal after all this is drawn the screen once,
	// at the writer's columns and rows (a smaller font, a scroll, not its lines wrapped
	// again): its rows are the writer's.
	vicPage.do(t, chromedp.EmulateViewport(393, 851, chromedp.EmulateScale(2.75), chromedp.EmulateMobile))
	vicPage.do(t, chromedp.Navigate(href))
	vicPage.waitFor(t, "the screen so far", screenHas("echo live"))
	const rows = `[...document.querySelectorAll(".xterm-rows > div")].map((r) => r.textContent.trimEnd())`
	writerRows := eval[[]string](t, adaPage, rows)
	if got := eval[[]string](t, vicPage, rows); !slices.Equal(got, writerRows) {
		t.Errorf("the phone's screen:\n%s\nthe writer's:\n%s", strings.Join(got, "\n"), strings.Join(writerRows, "\n"))
	}
	if n := eval[int](t, vicPage, rows+`.filter((r) => r.includes("echo live")).length`); n != 1 {
		t.Errorf("the phone shows the last command line %d times", n)
	}
	if w := eval[int](t, vicPage, `document.documentElement.scrollWidth`); w > 393 {
		t.Errorf("at 393 px the terminal page is %d px wide", w)
	}
	vicPage.screenshot(t, "terminal-viewer-phone-of-desktop.png")

	adaPage.screenshots(t, "terminal", "")
	vicPage.do(t, chromedp.Navigate(href))
	vicPage.waitFor(t, "the screen so far", screenHas("echo live"))
	vicPage.screenshots(t, "terminal-viewer", "")
}
