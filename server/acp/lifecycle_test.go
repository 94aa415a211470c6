package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/store"
	"conch/shared"
)

// listingEnv is an env whose agent "scripted" (cfg, with List) remembers its sessions in
// dir, where a session of env.task said hello: the agent lists it in another task.
func listingEnv(t *testing.T, cfg acptest.Config) (env *testEnv, dir string, first shared.Session, other shared.Task) {
	t.Helper()
	hello := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("hi"))
	}
	cfg.Scripts = map[string]script{"hello": hello, acptest.Recall: hello}
	cfg.List = true
	env = newEnv(t, scriptedAs(cfg), false, Profile{Name: "scripted"})
	dir = t.TempDir()
	first, err := env.m.StartSession(context.Background(), env.task.ID, "scripted", dir)
	if err != nil || first.State != shared.SessionReady {
		t.Fatalf("start: %+v %v", first, err)
	}
	env.prompt(t, first.ID, "hello")
	if other, err = env.st.CreateTask(context.Background(), "other", ""); err != nil {
		t.Fatal(err)
	}
	return env, dir, first, other
}

// taskSessions lists the ids of a task's sessions.
func (env *testEnv) taskSessions(t *testing.T, taskID string) []string {
	t.Helper()
	ids, err := env.st.TaskSessions(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// An agent's earlier session in a directory, listed (session/list) for another task,
// imports as a session of that task: ready, its agent stopped, resumable, its chat saying
// where it came from. Its first prompt starts the agent, which takes the conversation up
// again (session/resume, or session/load whose replay is not stored) and remembers it.
// The task that holds a session says so in the list.
func TestImportAgentSession(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name         string
		resume, load bool
		method       string
	}{
		{"resume", true, false, sdk.AgentMethodSessionResume},
		{"load", false, true, sdk.AgentMethodSessionLoad},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var calls takeUps
			env, dir, first, other := listingEnv(t, acptest.Config{Resume: tt.resume, Load: tt.load, OnTakeUp: calls.note})
			agentID, _, err := env.st.AgentSession(context.Background(), first.ID)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			page, err := env.m.ListAgentSessions(ctx, env.task.ID, "scripted", dir, "")
			if err != nil || len(page.Sessions) != 1 || page.Sessions[0] != (shared.AgentSession{ID: agentID, Title: "hello", SessionID: first.ID}) {
				t.Fatalf("the list in the task that holds it: %+v %v", page, err)
			}
			page, err = env.m.ListAgentSessions(ctx, other.ID, "scripted", dir, "")
			if err != nil || len(page.Sessions) != 1 || page.Sessions[0] != (shared.AgentSession{ID: agentID, Title: "hello"}) ||
				page.Agent != "scripted" || page.Cwd != dir || page.NextCursor != "" || page.Skipped != 0 {
				t.Fatalf("the list in another task: %+v %v", page, err)
			}
			got, err := env.m.ImportAgentSessions(ctx, other.ID, "scripted", dir, []string{agentID})
			if err != nil || len(got) != 1 {
				t.Fatalf("import: %+v %v", got, err)
			}
			sess := got[0]
			if sess.TaskID != other.ID || sess.Cwd != dir || sess.State != shared.SessionReady || !sess.Stopped || !sess.Resumable {
				t.Errorf("imported %+v", sess)
			}
			want := fmt.Sprintf(`Imported the agent's own session %s, "hello". Its first prompt, or Resume, starts the agent, which takes the conversation up again (ACP %s).`, agentID, tt.method)
			if status := env.statusTexts(t, sess.ID); !slices.Equal(status, []string{want}) {
				t.Errorf("status messages %q, want %q", status, want)
			}
			if page, _ := env.m.ListAgentSessions(ctx, other.ID, "scripted", dir, ""); len(page.Sessions) != 1 || page.Sessions[0].SessionID != sess.ID {
				t.Errorf("after the import the list is %+v", page)
			}
			env.restart(t, sess.ID, acptest.Recall)
			if texts := env.agentTexts(t, sess.ID); !slices.Equal(texts, []string{"I remember: hello"}) {
				t.Errorf("agent messages %q", texts)
			}
			if c := calls.list(); !slices.Equal(c, []string{tt.method + " " + agentID}) {
				t.Errorf("calls %q", c)
			}
			assertEventsMatchStore(t, env, sess.ID)
		})
	}
}

// The list pages as the agent does (its cursor, passed on), and an import finds an id on
// a later page.
func TestImportAgentSessionPaged(t *testing.T) {
	t.Parallel()
	env, dir, _, other := listingEnv(t, acptest.Config{Resume: true, ListPage: 1})
	for range 2 {
		sess, err := env.m.StartSession(context.Background(), env.task.ID, "scripted", dir)
		if err != nil {
			t.Fatal(err)
		}
		env.prompt(t, sess.ID, "hello")
	}
	ctx := context.Background()
	var ids []string
	cursor := ""
	for {
		page, err := env.m.ListAgentSessions(ctx, other.ID, "scripted", dir, cursor)
		if err != nil || len(page.Sessions) != 1 {
			t.Fatalf("page at %q: %+v %v", cursor, page, err)
		}
		ids = append(ids, page.Sessions[0].ID)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(ids) != 3 || !slices.IsSorted(ids) {
		t.Fatalf("listed %q", ids)
	}
	got, err := env.m.ImportAgentSessions(ctx, other.ID, "scripted", dir, []string{ids[2], ids[0]})
	if err != nil || len(got) != 2 {
		t.Fatalf("import: %+v %v", got, err)
	}
	for i, id := range []string{ids[2], ids[0]} {
		if agentID, by, _ := env.st.AgentSession(ctx, got[i].ID); agentID != id || by == "" {
			t.Errorf("session %d holds %q by %q, want %q", i, agentID, by, id)
		}
	}
}

// Every bad import is refused with its reason and creates nothing: ids that are not
// acceptable, named twice, too many, not listed by the agent, or held by the task already;
// an agent that lists none (no session/list), or that could not take one up again.
func TestImportAgentSessionRefused(t *testing.T) {
	t.Parallel()
	env, dir, first, other := listingEnv(t, acptest.Config{Resume: true})
	ctx := context.Background()
	agentID, _, _ := env.st.AgentSession(ctx, first.ID)
	many := make([]string, shared.MaxAgentSessionImports+1)
	for i := range many {
		many[i] = fmt.Sprint("s", i)
	}
	for _, tt := range []struct {
		name, task string
		ids        []string
		code, says string
	}{
		{"none", other.ID, nil, shared.CodeInvalid, "1 to 20"},
		{"too many", other.ID, many, shared.CodeInvalid, "1 to 20"},
		{"a space", other.ID, []string{"a b"}, shared.CodeInvalid, "not an agent's session id"},
		{"not ASCII", other.ID, []string{"é"}, shared.CodeInvalid, "not an agent's session id"},
		{"too long", other.ID, []string{strings.Repeat("a", 257)}, shared.CodeInvalid, "not an agent's session id"},
		{"twice", other.ID, []string{agentID, agentID}, shared.CodeInvalid, "twice"},
		{"not listed", other.ID, []string{agentID, "scripted-0"}, shared.CodeInvalid, "does not list a session scripted-0"},
		{"held", env.task.ID, []string{agentID}, shared.CodeConflict, "holds the agent's session"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := env.taskSessions(t, tt.task)
			_, err := env.m.ImportAgentSessions(ctx, tt.task, "scripted", dir, tt.ids)
			if shared.ErrorCode(err) != tt.code || !strings.Contains(shared.ErrorMessage(err), tt.says) {
				t.Errorf("%v (%s), want %s saying %q", err, shared.ErrorCode(err), tt.code, tt.says)
			}
			if after := env.taskSessions(t, tt.task); !slices.Equal(after, before) {
				t.Errorf("sessions %q became %q", before, after)
			}
		})
	}
	if _, err := env.m.ListAgentSessions(ctx, other.ID, "scripted", dir, strings.Repeat("c", 1025)); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("a cursor of 1025 bytes: %v", err)
	}

	for _, tt := range []struct {
		name string
		cfg  acptest.Config
		says string
	}{
		{"no session/list", acptest.Config{Resume: true}, "does not list its sessions"},
		{"no resume nor load", acptest.Config{List: true}, "neither session/resume nor session/load"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, scriptedAs(tt.cfg), false, Profile{Name: "scripted"})
			_, err := env.m.ImportAgentSessions(ctx, env.task.ID, "scripted", t.TempDir(), []string{"x"})
			if shared.ErrorCode(err) != shared.CodeConflict || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("%v, want a conflict saying %q", err, tt.says)
			}
			if ids := env.taskSessions(t, env.task.ID); len(ids) != 0 {
				t.Errorf("sessions %q", ids)
			}
		})
	}
}

// What a hostile agent lists is checked entry by entry: ids that are not acceptable,
// repeated, in another directory, or past the page's bound are skipped and counted;
// titles become bounded plain text; a time that is not RFC 3339 and a cursor that is too
// long are left out. The agent's sandbox directory is gone after the listing.
func TestListAgentSessionsHostile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctl, bad, long := "a\x1b[31mred\x00\nline", "bad\xff", strings.Repeat("é", 300)
	when, notTime := "2026-12-01T10:00:00Z", "yesterday"
	entries := []sdk.SessionInfo{
		{SessionId: "ok-1", Cwd: dir, Title: &ctl, UpdatedAt: &when},
		{SessionId: "ok-2", Cwd: dir + "/", Title: &bad, UpdatedAt: &notTime},
		{SessionId: "ok-3", Cwd: dir, Title: &long},
		{SessionId: "ok-1", Cwd: dir},
		{SessionId: "has space", Cwd: dir},
		{SessionId: "", Cwd: dir},
		{SessionId: sdk.SessionId(strings.Repeat("x", 257)), Cwd: dir},
		{SessionId: "elsewhere", Cwd: "/etc"},
	}
	for i := range maxListed {
		entries = append(entries, sdk.SessionInfo{SessionId: sdk.SessionId(fmt.Sprint("more-", i)), Cwd: dir})
	}
	cursor := strings.Repeat("c", maxCursorBytes+1)
	env := newEnv(t, scriptedAs(acptest.Config{List: true, Listed: func(sdk.ListSessionsRequest) sdk.ListSessionsResponse {
		return sdk.ListSessionsResponse{Sessions: entries, NextCursor: &cursor}
	}}), false, Profile{Name: "scripted"})
	page, err := env.m.ListAgentSessions(context.Background(), env.task.ID, "scripted", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Sessions) != maxListed || page.Skipped != len(entries)-maxListed || page.NextCursor != "" {
		t.Fatalf("%d sessions, %d skipped, cursor %q", len(page.Sessions), page.Skipped, page.NextCursor)
	}
	wantTime := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s := page.Sessions
	if s[0].ID != "ok-1" || s[0].Title != "a [31mred  line" || s[0].UpdatedAt == nil || !s[0].UpdatedAt.Equal(wantTime) {
		t.Errorf("first: %+v", s[0])
	}
	if s[1].ID != "ok-2" || s[1].Title != "bad\uFFFD" || s[1].UpdatedAt != nil {
		t.Errorf("second: %+v", s[1])
	}
	if s[2].Title != strings.Repeat("é", shared.MaxAgentTitleBytes/2) {
		t.Errorf("third's title is %d bytes", len(s[2].Title))
	}
	if s[3].ID != "more-0" {
		t.Errorf("fourth: %+v", s[3])
	}
	if left, _ := filepath.Glob(filepath.Join(env.dir, "sandboxes", "list-*")); len(left) != 0 {
		t.Errorf("sandbox directories left: %q", left)
	}
}

// closes records the sessions an agent was asked to close.
type closes struct {
	mu  sync.Mutex
	ids []string
}

func (c *closes) note(sid sdk.SessionId) {
	c.mu.Lock()
	c.ids = append(c.ids, string(sid))
	c.mu.Unlock()
}

func (c *closes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

// A session that ends for good (Stop: its task deleted, its attempt closed) asks an agent
// that offers session/close to close its session before the agent is stopped; one that
// does not offer it is not asked, nor is the agent of a session left for another server
// (Leave). An agent that never answers, or refuses, delays the end by RequestTimeout at
// most: the session ends all the same.
func TestStopClosesAgentSession(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		offer  bool
		answer func(ctx context.Context) error
		leave  bool
		closed bool
	}{
		{"closed", true, func(context.Context) error { return nil }, false, true},
		{"not offered", false, nil, false, false},
		{"left", true, func(context.Context) error { return nil }, true, false},
		{"refused", true, func(context.Context) error { return errors.New("no") }, false, true},
		{"never answered", true, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var asked closes
			env := newEnv(t, scriptedAs(acptest.Config{Resume: true, Close: tt.offer, OnClose: func(ctx context.Context, sid sdk.SessionId) error {
				asked.note(sid)
				return tt.answer(ctx)
			}}), false, Profile{Name: "scripted"})
			env.m.cfg.RequestTimeout = 100 * time.Millisecond
			sess := env.start(t, "scripted")
			agentID, _, _ := env.st.AgentSession(context.Background(), sess.ID)
			if tt.leave {
				env.m.Leave(sess.ID, "left")
			} else {
				env.m.Stop(sess.ID, "its task was deleted")
			}
			if got, _ := env.st.GetSession(context.Background(), sess.ID); !got.State.Ended() {
				t.Errorf("after the stop the session is %s", got.State)
			}
			want := []string{}
			if tt.closed {
				want = []string{agentID}
			}
			if got := asked.list(); !slices.Equal(append([]string{}, got...), want) {
				t.Errorf("closed %q, want %q", got, want)
			}
		})
	}
}

// The Claude Code ACP adapter (make acp-agents), a real process in its sandbox, lists the
// conversations Claude Code keeps for a directory (its config directory's projects/, here
// 60 written by the test as Claude Code writes them: its session/list reads no more) in
// pages of 50, newest first; Conch passes its cursor on, and imports one of the second
// page, which the adapter lists again when asked. It offers session/resume, by which the
// imported session will resume.
func TestClaudeAdapterListsSessions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the Claude Code ACP adapter (make test runs it)")
	}
	exe, node, adapter := installed(t, realAgents[1])
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	config := t.TempDir()
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	if err := acptest.WriteClaudeSessions(config, dir, 60, start); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, ExecLauncher(exe), true, Profile{Name: "claude", Command: node, Args: []string{adapter},
		Env:     map[string]string{"CLAUDE_CONFIG_DIR": config},
		Sandbox: SandboxConfig{Read: []string{filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(adapter))))}, Write: []string{config}}})
	ctx := context.Background()
	first, err := env.m.ListAgentSessions(ctx, env.task.ID, "claude", dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Sessions) != 50 || first.NextCursor == "" || first.Skipped != 0 {
		t.Fatalf("first page: %d sessions, cursor %q, %d skipped", len(first.Sessions), first.NextCursor, first.Skipped)
	}
	newest := first.Sessions[0]
	if newest.ID != acptest.ClaudeSessionID(59) || newest.Title != "Task 59: fix [2J the login" ||
		newest.UpdatedAt == nil || !newest.UpdatedAt.Equal(start.Add(59*time.Minute)) {
		t.Errorf("newest: %+v", newest)
	}
	second, err := env.m.ListAgentSessions(ctx, env.task.ID, "claude", dir, first.NextCursor)
	if err != nil || len(second.Sessions) != 10 || second.NextCursor != "" {
		t.Fatalf("second page: %+v %v", second, err)
	}
	oldest := second.Sessions[9].ID
	got, err := env.m.ImportAgentSessions(ctx, env.task.ID, "claude", dir, []string{oldest})
	if err != nil || len(got) != 1 || !got[0].Stopped || !got[0].Resumable {
		t.Fatalf("import: %+v %v", got, err)
	}
	if id, by, _ := env.st.AgentSession(ctx, got[0].ID); id != oldest || by != store.ResumeBy {
		t.Errorf("the import holds %q by %q", id, by)
	}
	if left, _ := filepath.Glob(filepath.Join(env.dir, "sandboxes", "list-*")); len(left) != 0 {
		t.Errorf("sandbox directories left: %q", left)
	}
}

// Gemini CLI 0.61.0 (make gemini), a real process in its sandbox, offers no session/list:
// a listing and an import are refused with the reason, and store nothing.
func TestGeminiListsNoSessions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Gemini CLI (make test runs it)")
	}
	exe, node, gemini := installed(t, realAgents[0])
	env := newEnv(t, ExecLauncher(exe), true, Profile{Name: "gemini", Command: node, Args: append([]string{gemini}, realAgents[0].args...),
		Env:     realAgents[0].env,
		Sandbox: SandboxConfig{Read: []string{filepath.Join(filepath.Dir(gemini), "..", "..", "..", "..")}}})
	dir := t.TempDir()
	if _, err := env.m.ListAgentSessions(context.Background(), env.task.ID, "gemini", dir, ""); shared.ErrorCode(err) != shared.CodeConflict ||
		!strings.Contains(err.Error(), "does not list its sessions") {
		t.Errorf("list: %v", err)
	}
	if _, err := env.m.ImportAgentSessions(context.Background(), env.task.ID, "gemini", dir, []string{"x"}); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("import: %v", err)
	}
	if ids := env.taskSessions(t, env.task.ID); len(ids) != 0 {
		t.Errorf("sessions %q", ids)
	}
}

// Codex's ACP adapter (make acp-agents), a real process in a sandbox with no network,
// opens a session offline once signed in with an API key (auth_method codex-api-key), and
// closes it when Conch asks (session/close) as its session ends for good.
func TestCodexAdapterClosesItsSession(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts Codex's ACP adapter (make test runs it)")
	}
	exe, node, codex := installed(t, realAgents[2])
	env := newEnv(t, ExecLauncher(exe), true, Profile{Name: "codex", Command: node, Args: []string{codex},
		Env: map[string]string{"CODEX_API_KEY": "offline"}, AuthMethod: "codex-api-key",
		Sandbox: SandboxConfig{Read: []string{filepath.Join(filepath.Dir(codex), "..", "..", "..", "..")}, Network: Network{Policy: shared.NetworkNone}}})
	var logs lockedBuffer
	env.m.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sess := env.start(t, "codex")
	env.m.Stop(sess.ID, "its task was deleted")
	if got, _ := env.st.GetSession(context.Background(), sess.ID); !got.State.Ended() {
		t.Errorf("after the stop the session is %s", got.State)
	}
	if text := logs.String(); !strings.Contains(text, "the agent closed its session") {
		t.Errorf("no close in the log:\n%s", text)
	}
}

// lockedBuffer is a log's output that the agent's goroutines and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
