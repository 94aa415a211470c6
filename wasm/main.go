// Command wasm is the browser entry point of Conch's UI: it registers the routes and
// starts go-app. Built with GOOS=js GOARCH=wasm into web/app.wasm.
package main

import (
	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/ui"
)

func main() {
	ui.Routes()
	app.RunWhenOnBrowser()
}
