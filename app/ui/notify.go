package ui

import (
	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// System notifications of permission requests: the page raises one when a request arrives
// while its tab is hidden, if the person allowed notifications. It offers to ask for that
// permission once (the offer remembers it was made, whatever the answer); nothing needs it.

// notifyAskedKey marks, in local storage, that the offer was made.
const notifyAskedKey = "conch.notifications.asked"

// offerNotifications reports whether to offer notifications: they are supported, not
// decided yet, and not offered before.
func offerNotifications(ctx app.Context) bool {
	if ctx.Notifications().Permission() != app.NotificationDefault {
		return false
	}
	var asked bool
	_ = ctx.LocalStorage().Get(notifyAskedKey, &asked)
	return !asked
}

// askNotifications asks the browser for the permission, once.
func askNotifications(ctx app.Context) {
	_ = ctx.LocalStorage().Set(notifyAskedKey, true)
	ctx.Async(func() { ctx.Notifications().RequestPermission() })
}

// notifyHidden raises a system notification of a new pending request while the page is
// hidden and notifications are allowed.
func notifyHidden(ctx app.Context, m shared.Message) {
	if !m.Type.Asks() || m.Metadata == nil || m.Metadata.Status != shared.StatusPending ||
		!app.Window().Get("document").Get("hidden").Bool() || ctx.Notifications().Permission() != app.NotificationGranted {
		return
	}
	title := "The agent asks permission"
	if m.Type == shared.TypeElicitation {
		title = "The agent asks a question"
	}
	ctx.Notifications().New(app.Notification{Title: title, Body: m.Visible().Content, // shown like the page shows it
		Path: "/sessions/" + m.SessionID, Tag: m.ID})
}
