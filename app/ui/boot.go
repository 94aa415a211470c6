package ui

import (
	"encoding/json"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// BootFunc gives the prerender of a session page what its HTML carries: the session and
// its newest messages, projected (shared.Boot), from the one-time key the server put in
// the page's URL (shared.BootParam). The server loads it before the prerender, through
// the checks of the API route that serves the same data, so the UI reads no store of
// its own; a page without a key shows no data. The prerender shows the newest messages
// before the app has loaded, and the app starts from them without asking again.
type BootFunc func(key string) (shared.Boot, error)

// loadBoot is the handler's BootFunc; nil in the browser and for a handler without one.
var loadBoot BootFunc

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
