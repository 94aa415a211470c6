package acp

import (
	"context"
	"os"
	"slices"
	"testing"

	"conch/server/acp/acptest"
	"conch/shared"
)

// Fork of an agent (a real process) that offers session/fork and session/resume: the
// agent forks its session, a new agent process of a new session of the same task takes
// the fork up and remembers the conversation, which goes on apart from the first. An
// agent that does not offer session/fork is not forked: a conflict, which starts nothing.
func TestForkSession(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, testAgent(exe, "resume"), false, Profile{Name: "resumer", Command: exe})
	sess := env.start(t, "resumer")
	env.prompt(t, sess.ID, "hello")
	// Forked between turns: once the turn's worker is done too (its state is published first).
	waitFor(t, env.ev, "the turn's worker to end", func() bool {
		s, err := env.m.live(sess.ID)
		return err == nil && !s.busy()
	})

	f, err := env.m.Fork(context.Background(), sess.ID)
	if err != nil || !f.Forked || f.Session.ID == sess.ID || f.Session.TaskID != sess.TaskID || f.Session.State != shared.SessionReady || !f.Session.Resumable {
		t.Fatalf("fork: %+v %v", f, err)
	}
	if status := env.statusTexts(t, f.Session.ID); !slices.Equal(status, []string{forkNote}) {
		t.Errorf("the fork's status messages %q", status)
	}
	env.prompt(t, f.Session.ID, acptest.Recall)
	env.prompt(t, sess.ID, acptest.Recall)
	if texts := env.agentTexts(t, f.Session.ID); !slices.Equal(texts, []string{"I remember: hello"}) {
		t.Errorf("the fork's agent says %q", texts)
	}
	if texts := env.agentTexts(t, sess.ID); !slices.Equal(texts, []string{"hi", "I remember: hello"}) {
		t.Errorf("the first session's agent says %q", texts)
	}

	plain := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{}, Resume: true}), false, Profile{Name: "scripted"})
	other := plain.start(t, "scripted")
	if _, err := plain.m.Fork(context.Background(), other.ID); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("an agent without session/fork: %v", err)
	}
	if tasks, _ := plain.st.ListTasks(context.Background()); len(tasks) != 1 || len(tasks[0].Sessions) != 1 {
		t.Errorf("a refused fork made a session: %+v", tasks)
	}
}
