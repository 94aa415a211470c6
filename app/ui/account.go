package ui

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// AccountPage is /account: who is signed in, this browser's notifications (push.go),
// their personal access tokens, and, for admins, the people of this server (invitation
// links, deletion), its runners and their load, and, in its bar, a link that downloads
// the audit.
type AccountPage struct {
	app.Compo

	me       *shared.Account
	tokens   []shared.AccessToken
	accounts []shared.Account
	runners  []shared.Runner // for admins
	err      string

	tokenName string
	tokenDays string // the new token's life: days, "0" until revoked
	secret    string // the token just made: shown once
	role      string // of the next invitation
	invite    string // the link just made
	note      string // "Copied", for a moment
}

func newAccountPage() app.Composer { return &AccountPage{role: shared.RoleMember, tokenDays: "30"} }

type tokenLife struct {
	days  int
	label string
}

// tokenLives are the lives the token form offers, in days (0: until revoked); an
// account of single sign-on gets those up to shared.SSOTokenDays.
var tokenLives = []tokenLife{{7, "7 days"}, {30, "30 days"}, {90, "90 days"}, {shared.MaxTokenDays, "a year"}, {0, "until revoked"}}

// OnMount loads who is signed in, then what that account may see.
func (p *AccountPage) OnMount(ctx app.Context) {
	ctx.Page().SetTitle("Account · Conch")
	ctx.Async(func() {
		c := context.Background()
		me, err := api.Me(c)
		var tokens []shared.AccessToken
		var accounts []shared.Account
		if err == nil && me.ID != "" {
			tokens, err = api.AccessTokens(c)
		}
		if err == nil && me.Role == shared.RoleAdmin && me.Login != "local" {
			accounts, err = api.Accounts(c)
		}
		var runners []shared.Runner
		if err == nil && me.Role == shared.RoleAdmin {
			runners, err = api.Runners(c)
		}
		ctx.Dispatch(func(app.Context) {
			if err != nil {
				p.err = whyNot("Your account could not be loaded", err)
				return
			}
			p.me, p.tokens, p.accounts, p.runners = &me, visibleTokens(tokens), accounts, runners
		})
	})
}

// visibleTokens marks the names people gave their tokens, where they enter the page.
func visibleTokens(ts []shared.AccessToken) []shared.AccessToken {
	for i := range ts {
		ts[i].Name = shared.Visible(ts[i].Name)
	}
	return ts
}

// reload fetches the lists again after a change.
func (p *AccountPage) reload(ctx app.Context) {
	me := *p.me
	ctx.Async(func() {
		c := context.Background()
		tokens, err := api.AccessTokens(c)
		var accounts []shared.Account
		if err == nil && me.Role == shared.RoleAdmin {
			accounts, err = api.Accounts(c)
		}
		ctx.Dispatch(func(app.Context) {
			if err != nil {
				p.err = whyNot("Your account could not be loaded", err)
				return
			}
			p.tokens, p.accounts = visibleTokens(tokens), accounts
		})
	})
}

// do runs one change, then reloads the lists; what it says on failure is what failed.
func (p *AccountPage) do(ctx app.Context, what string, change func(context.Context) error) {
	p.err = ""
	ctx.Async(func() {
		err := change(context.Background())
		ctx.Dispatch(func(ctx app.Context) {
			if err != nil {
				p.err = whyNot(what, err)
				return
			}
			p.reload(ctx)
		})
	})
}

func (p *AccountPage) createToken(ctx app.Context, e app.Event) {
	e.PreventDefault()
	name := p.tokenName
	days, _ := strconv.Atoi(p.tokenDays) // one of tokenLives
	// The name field is emptied here: go-app leaves a typed value alone when the one it
	// rendered last was empty too. (Not the form's reset, which would show the life's
	// first option while p.tokenDays keeps the chosen one.)
	e.Get("target").Get("elements").Call("namedItem", "token-name").Set("value", "")
	p.tokenName = ""
	p.do(ctx, "Could not create the token", func(c context.Context) error {
		t, err := api.CreateAccessToken(c, name, days)
		if err == nil {
			ctx.Dispatch(func(app.Context) { p.secret = t.Token })
		}
		return err
	})
}

func (p *AccountPage) revoke(id string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		p.do(ctx, "Could not revoke the token", func(c context.Context) error { return api.RevokeAccessToken(c, id) })
	}
}

func (p *AccountPage) createInvite(ctx app.Context, e app.Event) {
	e.PreventDefault()
	role := p.role
	p.do(ctx, "Could not make the invitation", func(c context.Context) error {
		inv, err := api.Invite(c, role)
		if err == nil {
			link := app.Window().Get("location").Get("origin").String() + inv.URL
			ctx.Dispatch(func(app.Context) { p.invite = link })
		}
		return err
	})
}

func (p *AccountPage) deleteAccount(id string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		p.do(ctx, "Could not delete the account", func(c context.Context) error { return api.DeleteAccount(c, id) })
	}
}

func (p *AccountPage) copy(text string) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		p.note = toClipboard(ctx, text, "Copied", func(note string) {
			if p.note == note {
				p.note = ""
			}
		})
	}
}

// Render draws the page; prerendered, it says it is loading.
func (p *AccountPage) Render() app.UI {
	return app.Div().Class("page", "account-page").Body(
		app.Header().Class("bar").Body(
			app.A().Class("back").Href("/").Text("← Tasks"),
			app.H1().Text("Account"),
			app.If(p.me != nil && p.me.Role == shared.RoleAdmin, func() app.UI {
				return app.A().Class("button", "secondary").Href("/api/v1/audit").Attr("download", "conch-audit.jsonl").
					Title("Every write of the last day, by whom, as JSON lines").Text("Audit")
			}),
		),
		app.If(p.err != "", func() app.UI { return app.P().Class("alert").Role("alert").Text(p.err) }),
		app.Main().Body(p.renderBody()),
	)
}

func (p *AccountPage) renderBody() app.UI {
	me := p.me
	switch {
	case me == nil:
		return app.If(p.err == "", func() app.UI { return app.P().Class("empty").Text("Loading…") })
	case me.Login == "local":
		return app.Div().Body(
			app.P().Class("empty").Text("This server has no sign-in: it serves this computer only, and whoever uses it is its admin. "+
				"Start it with --token to have accounts."),
			&pushToggle{},
			p.renderRunners(),
		)
	}
	return app.Div().Body(
		app.Section().Class("new-task", "account-card").Body(
			app.H2().Text("You"),
			app.If(me.ID == "", func() app.UI {
				return app.P().Text("You are signed in with the server's token, as an admin. Invite people below; each then signs in as themselves.")
			}).Else(func() app.UI {
				return app.P().Body(app.Strong().Text(me.Login), app.Text(" · "+me.Role))
			}),
		),
		&pushToggle{},
		app.If(me.ID != "", p.renderTokens),
		app.If(me.Role == shared.RoleAdmin, p.renderPeople),
		app.If(me.Role == shared.RoleAdmin, p.renderRunners),
	)
}

// renderRunners lists the runners that joined this server (conch runner) and their load.
func (p *AccountPage) renderRunners() app.UI {
	return app.Section().Class("new-task", "account-card").Aria("label", "Runners").Body(
		app.H2().Text("Runners"),
		app.If(len(p.runners) == 0, func() app.UI {
			return app.P().Class("empty").Text("No runner has joined. A runner runs agents on a machine of its own and dials out to this server: " +
				"make its token with conch runners token NAME, then start conch runner there (README, Runners).")
		}),
		app.Ul().Class("account-list").Body(app.Range(p.runners).Slice(func(i int) app.UI {
			r := p.runners[i]
			state := "connected"
			if !r.Connected {
				state = "gone, last seen " + r.LastSeen.Local().Format("2 Jan 2006 15:04")
			}
			labels := "no labels"
			if len(r.Labels) > 0 {
				labels = strings.Join(r.Labels, ", ")
			}
			return app.Li().Body(
				app.Span().Class("account-name").Text(shared.Visible(r.Name)),
				app.Span().Class("account-meta").Text(state+" · "+strconv.Itoa(r.Sessions)+" of "+strconv.Itoa(r.Capacity)+" sessions · "+labels),
			)
		})),
	)
}

func (p *AccountPage) renderTokens() app.UI {
	lives := tokenLives
	if p.me.Provider != "" {
		lives = slices.DeleteFunc(slices.Clone(lives), func(l tokenLife) bool { return l.days == 0 || l.days > shared.SSOTokenDays })
	}
	return app.Section().Class("new-task", "account-card").Body(
		app.H2().Text("Access tokens"),
		app.P().Class("empty").Text("For the conch command and scripts: CONCH_TOKEN=… conch tasks"),
		app.Form().Class("inline-form").OnSubmit(p.createToken).Body(
			field("token-name", "Name", app.Input().ID("token-name").Required(true).MaxLength(100).Value(p.tokenName).OnInput(bind(&p.tokenName))),
			field("token-days", "Lasts", app.Select().ID("token-days").OnChange(bind(&p.tokenDays)).Body(
				app.Range(lives).Slice(func(i int) app.UI {
					l := lives[i]
					v := strconv.Itoa(l.days)
					return selected(app.Option().Value(v), v == p.tokenDays).Text(l.label)
				}),
			)),
			app.Button().Type("submit").Text("Create token"),
		),
		app.If(p.secret != "", func() app.UI {
			return app.Div().Class("secret").Role("status").Body(
				app.P().Text("Copy it now: it is not shown again."),
				app.Code().Class("secret-value").Text(p.secret),
				app.Button().Type("button").Class("tool").OnClick(p.copy(p.secret), app.EventScope(p.secret)).Text("Copy token"),
				app.If(p.note != "", func() app.UI { return app.Span().Class("out-note-inline").Text(p.note) }),
			)
		}),
		app.If(len(p.tokens) == 0, func() app.UI { return app.P().Class("empty").Text("No tokens yet.") }),
		app.Ul().Class("account-list").Body(app.Range(p.tokens).Slice(func(i int) app.UI {
			t := p.tokens[i]
			used := "never used"
			if t.LastUsedAt != nil {
				used = "last used " + t.LastUsedAt.Local().Format("2 Jan 2006 15:04")
			}
			return app.Li().Body(
				app.Span().Class("account-name").Text(t.Name),
				app.Span().Class("account-meta").Text("made "+t.CreatedAt.Local().Format("2 Jan 2006")+" · "+used+ends(t.ExpiresAt)),
				app.Button().Type("button").Class("secondary").Aria("label", attrText("Revoke token "+t.Name)).OnClick(p.revoke(t.ID), app.EventScope(t.ID)).Text("Revoke"),
			)
		})),
	)
}

// ends says when a token stops working, "" for one that lasts until revoked.
func ends(at *time.Time) string {
	if at == nil {
		return ""
	}
	return " · ends " + at.Local().Format("2 Jan 2006")
}

func (p *AccountPage) renderPeople() app.UI {
	return app.Section().Class("new-task", "account-card").Body(
		app.H2().Text("People"),
		app.Ul().Class("account-list").Body(app.Range(p.accounts).Slice(func(i int) app.UI {
			a := p.accounts[i]
			return app.Li().Body(
				app.Span().Class("account-name").Text(a.Login),
				app.Span().Class("account-meta").Text(a.Role),
				app.If(p.me.ID != a.ID, func() app.UI {
					return app.Button().Type("button").Class("secondary").Aria("label", attrText("Delete account "+a.Login)).
						OnClick(p.deleteAccount(a.ID), app.EventScope(a.ID)).Text("Delete")
				}),
			)
		})),
		app.Form().Class("inline-form").OnSubmit(p.createInvite).Body(
			field("invite-role", "Role", app.Select().ID("invite-role").OnChange(bind(&p.role)).Body(
				app.Range(shared.Roles).Slice(func(i int) app.UI {
					r := shared.Roles[i]
					return selected(app.Option().Value(r), r == p.role).Text(r)
				}),
			)),
			app.Button().Type("submit").Text("Make an invitation link"),
		),
		app.If(p.invite != "", func() app.UI {
			return app.Div().Class("secret").Role("status").Body(
				app.P().Text("Send this link to the person: it works once, for 7 days."),
				app.Code().Class("secret-value").Text(p.invite),
				app.Button().Type("button").Class("tool").OnClick(p.copy(p.invite), app.EventScope(p.invite)).Text("Copy link"),
			)
		}),
	)
}
