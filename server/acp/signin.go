package acp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/store"
	"conch/shared"
)

// Terminal sign-in (ACP terminal authentication): an agent that refuses session/new until
// a person signs in (auth_required) and lists a sign-in to run in a terminal starts
// anyway, with no conversation yet. The chat shows what it asks (a sign_in message) with
// the command line, which the person runs in the session's terminal (console.go); then a
// prompt asks for session/new again on the same connection, and Resume ("Retry") starts
// a new agent process, as ACP v1 says a client does after a sign-in. An agent whose
// profile names an auth_method, or that lists no terminal sign-in, fails as before.

// Bounds of what an agent's sign-in methods may carry into the chat: hostile text.
const (
	maxSignIns     = 4
	maxSignInArgs  = 20
	maxSignInWord  = 300
	maxSignInTexts = 500
)

// errSignIn is a start whose session/new waits for a person to sign in.
type errSignIn struct {
	err     error // the agent's refusal
	methods []shared.SignInMethod
	wait    signInWait
}

func (e *errSignIn) Error() string { return e.err.Error() }

// signInWait is a session that waits for a person to sign in: what session/new needs, and
// the sign_in message, pending until the agent takes the sign-in up (or ends: the store
// cancels what is pending).
type signInWait struct {
	mcp  []sdk.McpServer
	dirs []string
	msg  shared.Message
}

// needSignIn turns session/new's refusal err into an errSignIn when the agent asks for a
// sign-in (auth_required) and offers one in a terminal, and the profile names none.
func (s *session) needSignIn(offered []sdk.AuthMethod, err error, mcp []sdk.McpServer, dirs []string) error {
	var re *sdk.RequestError
	if s.profile.AuthMethod != "" || !errors.As(err, &re) || re.Code != sdk.NewAuthRequired(nil).Code {
		return err
	}
	methods := s.terminalSignIns(offered)
	if len(methods) == 0 {
		return err
	}
	return &errSignIn{err: err, methods: methods, wait: signInWait{mcp: mcp, dirs: dirs}}
}

// askSignIn reports whether err is an errSignIn; if so the chat shows the sign-in, and
// the session starts with no conversation until the agent takes one.
func (s *session) askSignIn(err error) bool {
	var si *errSignIn
	if !errors.As(err, &si) {
		return false
	}
	name := store.CutText(s.profile.Name, maxSignInWord)
	m, serr := s.m.cfg.Store.CreateMessage(context.Background(), store.NewMessage{SessionID: s.id,
		AuthorType: shared.AuthorSystem, Type: shared.TypeSignIn,
		Content:  fmt.Sprintf("The agent %s asks you to sign in before it starts: %s.", name, takeUpFailure(si.err)),
		Metadata: &shared.Metadata{SignIn: si.methods, Status: shared.StatusPending}})
	if serr != nil {
		s.log.Error("store the agent's sign-in", "err", serr)
		return false
	}
	s.m.cfg.Events.MessageAdded(m)
	w := si.wait
	w.msg = m
	s.do(func(c *core) { c.signIn = &w })
	return true
}

// signedIn opens the agent's session before a turn of a session that waits for a sign-in:
// the person may have signed in since. Its error tells them what to do.
func (s *session) signedIn(ctx context.Context) error {
	var w *signInWait
	s.do(func(c *core) { w = c.signIn })
	if w == nil {
		return nil
	}
	if err := s.open(ctx, w.mcp, w.dirs); err != nil {
		return fmt.Errorf("the agent still asks you to sign in (%s). Run its sign-in in the session's terminal, then send again or press Retry", takeUpFailure(err))
	}
	s.settleSignIn(w)
	s.say("The agent took the sign-in: this conversation starts now.")
	return nil
}

// settleSignIn marks the sign_in message of w done: its sign-in was taken up, or the
// agent starts again to take it (a new message asks again if it still refuses).
func (s *session) settleSignIn(w *signInWait) {
	md := *w.msg.Metadata
	md.Status = shared.StatusCompleted
	m, changed, err := s.m.cfg.Store.UpdateMessage(context.Background(), w.msg.ID, store.Update{Metadata: &md})
	if err != nil {
		s.log.Error("settle the agent's sign-in", "err", err)
		return
	}
	if changed {
		s.m.cfg.Events.MessageUpdated(m)
	}
}

// retrySignIn stops the agent of a session that waits for a sign-in and reports true (its
// caller starts a new one); for any other it does nothing and reports false.
func (s *session) retrySignIn() bool {
	var w *signInWait
	s.do(func(c *core) { w, c.signIn = c.signIn, nil })
	if w == nil {
		return false
	}
	s.settleSignIn(w)
	s.park("The agent starts again, to take your sign-in.")
	return true
}

// envName is a variable name a shell takes in an assignment.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// terminalSignIns are the sign-ins of offered that run in a terminal, with their command
// lines: ACP's terminal methods run the profile's own command with the method's arguments
// and variables; the older `_meta["terminal-auth"]` of an agent method names its own
// command (Claude Code's adapter). A method with anything unfit (a variable's name, an
// argument past the bounds) is left out.
func (s *session) terminalSignIns(offered []sdk.AuthMethod) []shared.SignInMethod {
	var out []shared.SignInMethod
	for _, m := range offered {
		if len(out) == maxSignIns {
			break
		}
		var id, name string
		var desc *string
		var words []string
		var env map[string]any
		switch {
		case m.Terminal != nil:
			id, name, desc, env = m.Terminal.Id, m.Terminal.Name, m.Terminal.Description, m.Terminal.Env
			words = append(append([]string{s.profile.Command}, s.profile.Args...), m.Terminal.Args...)
		case m.Agent != nil:
			meta, _ := m.Agent.Meta["terminal-auth"].(map[string]any)
			command, _ := meta["command"].(string)
			if command == "" {
				continue
			}
			args, ok := stringList(meta["args"])
			if !ok {
				continue
			}
			id, name, desc = m.Agent.Id, m.Agent.Name, m.Agent.Description
			if label, _ := meta["label"].(string); label != "" {
				name = label
			}
			env, _ = meta["env"].(map[string]any)
			words = append([]string{command}, args...)
		default:
			continue
		}
		line, ok := commandLine(words, env)
		if !ok || id == "" {
			continue
		}
		method := shared.SignInMethod{ID: store.CutText(id, maxSignInWord), Name: store.CutText(cmp.Or(name, id), maxSignInWord), Command: line}
		if desc != nil {
			method.Description = store.CutText(*desc, maxSignInTexts)
		}
		out = append(out, method)
	}
	return out
}

// stringList is a JSON array of strings (nil: none); ok is false for anything else.
func stringList(v any) ([]string, bool) {
	if v == nil {
		return nil, true
	}
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// commandLine is words run with env, as one quoted shell command line; ok is false for
// a word or variable past the bounds, or a variable's name or value a shell cannot take.
func commandLine(words []string, env map[string]any) (string, bool) {
	if len(words) > maxSignInArgs || len(env) > maxSignInArgs {
		return "", false
	}
	var parts []string
	for name, v := range env {
		value, ok := v.(string)
		if !ok || !envName.MatchString(name) || len(name)+len(value) > maxSignInWord || !oneLine(value) {
			return "", false
		}
		parts = append(parts, name+"="+shared.ShellJoin(value))
	}
	slices.Sort(parts)
	for _, w := range words {
		if len(w) > maxSignInWord || !oneLine(w) {
			return "", false
		}
	}
	return strings.Join(append(parts, shared.ShellJoin(words...)), " "), true
}

// oneLine reports whether s has no control characters: typed into a terminal, it cannot
// end the line or do anything but stand for itself.
func oneLine(s string) bool {
	return !strings.ContainsFunc(s, unicode.IsControl)
}
