package ui

import (
	"context"
	"errors"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/app/client"
	"conch/shared"
)

// actionMessage carries a message the page should merge now (a value of shared.Message),
// such as the answer to a permission request, which also arrives later over the WebSocket.
const actionMessage = "conch/message"

// PermissionRow is an agent's permission request: one button per option, named by the
// agent, while it is pending; then what became of it. Every tab shows the answer when the
// updated message arrives, whichever tab (or script) gave it.
type PermissionRow struct {
	app.Compo

	SessionID string
	Msg       shared.Message

	sending  string // the option being sent
	readOnly string // why the person may not answer (stateReadOnly), when they may not
	err      string
	offer    bool // offer system notifications of later requests
}

// OnMount decides whether to offer notifications (in the browser only).
func (r *PermissionRow) OnMount(ctx app.Context) {
	r.offer = offerNotifications(ctx)
	ctx.ObserveState(stateReadOnly, &r.readOnly)
}

func (r *PermissionRow) askNotifications(ctx app.Context, _ app.Event) {
	r.offer = false
	askNotifications(ctx)
}

// Render draws the request.
func (r *PermissionRow) Render() app.UI {
	var md shared.Metadata
	if r.Msg.Metadata != nil {
		md = *r.Msg.Metadata
	}
	title := r.Msg.Content
	if md.Title != "" {
		title = md.Title
	}
	pending := md.Status == shared.StatusPending && r.readOnly == ""
	titleID := "perm-title-" + r.Msg.ID
	state := "perm-unknown" // a class name never carries what came with the message
	switch md.Status {
	case shared.StatusPending, shared.StatusSelected, shared.StatusCancelled:
		state = "perm-" + string(md.Status)
	}
	return app.Div().Class("msg", "perm", state).DataSet("message-id", r.Msg.ID).
		Role("group").Aria("labelledby", titleID).Body(
		app.P().Class("perm-label").Text(permissionLabel(md)),
		app.P().ID(titleID).Class("perm-title").Text(title),
		app.If(pending, func() app.UI {
			return app.Div().Class("perm-options").Body(
				app.Range(md.Options).Slice(func(i int) app.UI {
					o := md.Options[i]
					kind := "perm-reject"
					if o.Allows() {
						kind = "perm-allow"
					}
					return disabled(app.Button().Type("button").Class("perm-option", kind).DataSet("option-id", attrText(o.OptionID)), r.sending != "").
						OnClick(r.choose(o.OptionID)).Text(o.Name)
				}),
			)
		}),
		app.If(r.err != "", func() app.UI { return app.P().Class("perm-error").Role("alert").Text(r.err) }),
		app.If(pending && r.offer, func() app.UI {
			return app.Button().Type("button").Class("perm-notify").OnClick(r.askNotifications).
				Text("Notify me when an agent asks while this tab is hidden")
		}),
	)
}

// permissionLabel says where the request stands.
func permissionLabel(md shared.Metadata) string {
	switch md.Status {
	case shared.StatusPending:
		return "The agent asks permission"
	case shared.StatusSelected:
		for _, o := range md.Options {
			if o.OptionID != md.SelectedOptionID {
				continue
			}
			switch {
			case md.AnsweredBy == "":
				return "Answered: " + o.Name
			case o.Allows():
				return "Allowed by " + md.AnsweredBy + ": " + o.Name
			}
			return "Refused by " + md.AnsweredBy + ": " + o.Name
		}
		if md.AnsweredBy != "" {
			return "Answered by " + md.AnsweredBy
		}
		return "Answered" // ids are never shown: they are kept as the agent sent them (shared.Message.Visible)
	}
	return "Not answered: the request was withdrawn"
}

// choose sends the answer. The buttons stay disabled until the request is no longer
// pending; a refusal says why and lets the person try again.
func (r *PermissionRow) choose(optionID string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		if r.sending != "" {
			return
		}
		r.sending, r.err = optionID, ""
		sid, mid := r.SessionID, r.Msg.ID
		ctx.Async(func() {
			m, err := api.AnswerPermission(context.Background(), sid, mid, optionID)
			ctx.Dispatch(func(ctx app.Context) {
				switch {
				case err == nil:
					ctx.NewActionWithValue(actionMessage, m)
					return
				case shared.ErrorCode(err) == shared.CodeConflict:
					r.err = "This request was already answered."
				case errors.Is(err, client.ErrUnreachable):
					r.err = "Not sent: the server is unreachable. Try again."
				default:
					r.err = "Not sent: " + shared.ErrorMessage(err)
				}
				r.sending = ""
			})
		})
	}
}

// userRow is a person's prompt. In a shared session several people prompt one agent, so
// a prompt signed by an account (servers with accounts) shows whose it is, the reader's
// own included: the record reads the same to everyone.
func userRow(m shared.Message) app.UI {
	var author string
	if m.Metadata != nil {
		author = m.Metadata.Author
	}
	return app.Div().Class("msg", "user").DataSet("message-id", m.ID).Body(
		app.If(author != "", func() app.UI { return app.Span().Class("msg-author").Text(author) }),
		app.If(m.Content != "", func() app.UI { return app.Div().Class("bubble").Text(m.Content) }),
		app.If(m.Metadata != nil && len(m.Metadata.Attachments) > 0, func() app.UI {
			return &SentFiles{SessionID: m.SessionID, Files: m.Metadata.Attachments}
		}),
	)
}
