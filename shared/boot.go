package shared

import "time"

// Boot is what the HTML of a session page carries for the app to show without asking
// again: the session, its task and its newest page of messages, projected like every list (no
// output body, ever). The app reads it from the element BootElementID.
type Boot struct {
	Session Session `json:"session"`
	// Task is the session's task, for the page's header (its title, branch, Changes).
	Task     *Task       `json:"task,omitempty"`
	Messages MessagePage `json:"messages"` // newest first, as listed with sort=desc
	At       time.Time   `json:"at"`       // when the server read them: a kept copy says how old it is
}

// BootElementID is the id of the page's <script type="application/json"> holding the Boot.
const BootElementID = "conch-boot"

// BootMessages is how many of the newest messages a boot carries: one page of the app's
// list.
const BootMessages = 100

// BootParam is the query parameter under which the server hands the prerender of a page
// the data it loaded for it: a one-time key (server/api's pages).
const BootParam = "conch-boot"
