package acp

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// An agent (a real process) that refuses session/new until a person signs in, and lists a
// sign-in to run in a terminal, starts with the sign-in shown in the chat: its command line
// (the profile's command with the method's arguments and variables, quoted). A prompt
// before the sign-in fails saying what to do; the command run in the session's terminal
// signs in, and Retry (Resume) starts the agent again, which then takes prompts.
func TestTerminalSignIn(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, testAgent(exe, "signin"), true, Profile{Name: "signer", Command: exe})
	sess, err := env.m.StartSession(context.Background(), env.task.ID, "signer", "")
	if err != nil || sess.State != shared.SessionReady {
		t.Fatalf("start: %+v %v", sess, err)
	}
	var ask shared.Message
	for _, m := range env.messages(t, sess.ID) {
		if m.Type == shared.TypeSignIn {
			ask = m
		}
	}
	want := []shared.SignInMethod{{ID: "login", Name: "Log in", Description: "Opens the login screen.",
		Command: "CONCH_ACP_TEST_AGENT=signin-login " + exe + ` --login 'it'\''s me'`}}
	if ask.Metadata == nil || !slices.Equal(ask.Metadata.SignIn, want) || ask.Metadata.Status != shared.StatusPending || ask.Content != "The agent signer asks you to sign in before it starts: Authentication required." {
		t.Fatalf("the sign-in message: %q %+v", ask.Content, ask.Metadata)
	}

	env.prompt(t, sess.ID, "hello")
	if errs := env.texts(t, sess.ID, shared.TypeError, shared.AuthorAgent); len(errs) != 1 ||
		!strings.Contains(errs[0], "the agent still asks you to sign in (Authentication required). Run its sign-in in the session's terminal") {
		t.Fatalf("a prompt before the sign-in: %q", errs)
	}

	con, err := env.m.Console(sess.ID, "ada", true)
	if err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	watch(t, con, &screen, strings.TrimSpace(prompt())) // drawn from the screen, or as the shell prints it
	if err := con.Input([]byte(want[0].Command + "\r")); err != nil {
		t.Fatal(err)
	}
	watch(t, con, &screen, "Signed in as it's me")
	con.Close()

	got, err := env.m.Resume(context.Background(), sess.ID)
	if err != nil || got.State != shared.SessionReady || got.Stopped {
		t.Fatalf("retry: %+v %v", got, err)
	}
	env.prompt(t, sess.ID, "hello")
	if texts := env.agentTexts(t, sess.ID); !slices.Equal(texts, []string{"hi"}) {
		t.Errorf("agent messages %q", texts)
	}
	if status := env.statusTexts(t, sess.ID); !slices.Contains(status, "The agent starts again, to take your sign-in.") {
		t.Errorf("status messages %q", status)
	}
	for _, m := range env.messages(t, sess.ID) {
		if m.Type == shared.TypeSignIn && m.Metadata.Status != shared.StatusCompleted {
			t.Errorf("the sign-in taken up is %s", m.Metadata.Status)
		}
	}
}

// The sign-ins an agent lists are hostile text: only those that run in a terminal are
// kept, as command lines quoted for the shell; one with a variable a shell cannot take or
// a control character (which would end the typed line) is left out. Claude Code's older
// `_meta["terminal-auth"]` names its own command.
func TestTerminalSignIns(t *testing.T) {
	s := &session{profile: Profile{Command: "/usr/bin/agent", Args: []string{"--acp"}}}
	terminal := func(id string, args []string, env map[string]any) sdk.AuthMethod {
		return sdk.AuthMethod{Terminal: &sdk.AuthMethodTerminalInline{Id: id, Name: "Sign in " + id, Args: args, Env: env}}
	}
	got := s.terminalSignIns([]sdk.AuthMethod{
		{Agent: &sdk.AuthMethodAgent{Id: "oauth", Name: "OAuth"}},
		terminal("plain", []string{"login"}, nil),
		terminal("quoted", []string{"$(rm -rf ~)", "a b"}, map[string]any{"MODE": "it's", "A": "1"}),
		terminal("bad-name", nil, map[string]any{"A;rm": "x"}),
		terminal("bad-value", nil, map[string]any{"A": 1}),
		terminal("newline", []string{"login\nrm -rf ~"}, nil),
		{Agent: &sdk.AuthMethodAgent{Id: "claude-login", Name: "Log in with Claude", Meta: map[string]any{
			"terminal-auth": map[string]any{"command": "node", "args": []any{"cli.js", "/login"}, "label": "claude /login"}}}},
		{Agent: &sdk.AuthMethodAgent{Id: "odd", Name: "odd", Meta: map[string]any{"terminal-auth": map[string]any{"command": "x", "args": "not a list"}}}},
	})
	want := []shared.SignInMethod{
		{ID: "plain", Name: "Sign in plain", Command: "/usr/bin/agent --acp login"},
		{ID: "quoted", Name: "Sign in quoted", Command: `A=1 MODE='it'\''s' /usr/bin/agent --acp '$(rm -rf ~)' 'a b'`},
		{ID: "claude-login", Name: "claude /login", Command: "node cli.js /login"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("sign-ins\n%+v\nwant\n%+v", got, want)
	}
}
