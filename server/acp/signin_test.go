package acp

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

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
	if ask.Metadata == nil || !slices.Equal(ask.Metadata.SignIn, want) || ask.Content != "The agent signer asks you to sign in before it starts: Authentication required." {
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
	watch(t, con, &screen, "\x1b]133;B\a")
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
}
