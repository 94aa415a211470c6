package ui

import (
	"context"
	"encoding/json"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// BootFunc reads what the HTML of a session page carries: the session and its newest
// limit messages, projected (shared.Boot). The server gives one to Handler; the
// prerender of /sessions/{id} calls it, so the page shows the newest messages before the
// app has loaded, and the app starts from them without asking the server again.
type BootFunc func(ctx context.Context, sessionID string, limit int) (shared.Boot, error)

// loadBoot is the handler's BootFunc; nil in the browser and for a handler without one.
var loadBoot BootFunc

// bootTimeout bounds the prerender's read: past it the page goes out without messages,
// and the app lists them itself once it runs.
const bootTimeout = 2 * time.Second

// readBoot is the prerender's side: the boot of session id, or an error.
func readBoot(id string) (shared.Boot, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	return loadBoot(ctx, id, pageSize)
}

// bootScript is a boot as the page carries it: a script element that is data, not code
// (type application/json: the CSP has nothing to allow). encoding/json escapes <, > and
// &, so no text in a message can end the element.
func bootScript(b shared.Boot) string {
	data, err := json.Marshal(b)
	if err != nil {
		app.Log("encoding the boot payload of session", b.Session.ID, "failed:", err)
		return ""
	}
	return `<script type="application/json" id="` + shared.BootElementID + `">` + string(data) + `</script>`
}

// takeBoot returns the boot payload of the page the app was started on, and removes it,
// so that it serves once: pages opened later in the app list their messages themselves.
// It is called before go-app replaces the prerendered page, which holds the element.
func takeBoot() *shared.Boot {
	if !app.IsClient {
		return nil
	}
	el := app.Window().GetElementByID(shared.BootElementID)
	if !el.Truthy() {
		return nil
	}
	text := el.Get("textContent").String()
	el.Call("remove")
	var b shared.Boot
	if err := json.Unmarshal([]byte(text), &b); err != nil {
		app.Log("ignoring the page's boot payload:", err)
		return nil
	}
	return &b
}
