package acp

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/shared"
)

// probe runs the test binary's probe actions (TestMain's "probe" mode, and the scripted
// agent's "probe" script) and says how each went, one line each: "ACTION ARG: ok" or
// "ACTION ARG: error". Actions: read PATH, list DIR, write PATH, dial ADDR (TCP), and
// proxy HOST:PORT (an HTTP GET through the CONNECT proxy of $HTTPS_PROXY).
func probe(actions []string) string {
	var out strings.Builder
	for i := 0; i+1 < len(actions); i += 2 {
		action, arg := actions[i], actions[i+1]
		var err error
		switch action {
		case "read":
			_, err = os.ReadFile(arg)
		case "list":
			_, err = os.ReadDir(arg)
		case "write":
			err = os.WriteFile(arg, []byte("sandbox"), 0o644)
		case "dial":
			var c net.Conn
			if c, err = net.DialTimeout("tcp", arg, 5*time.Second); err == nil {
				c.Close()
			}
		case "proxy":
			err = getThroughProxy(arg)
		default:
			err = fmt.Errorf("unknown action %q", action)
		}
		result := "ok"
		if err != nil {
			result = err.Error()
		}
		fmt.Fprintf(&out, "%s %s: %s\n", action, arg, result)
	}
	return out.String()
}

// getThroughProxy asks $HTTPS_PROXY for a tunnel to addr, then GETs / through it.
func getThroughProxy(addr string) error {
	proxy := strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://")
	if proxy == "" {
		return errors.New("no HTTPS_PROXY")
	}
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
	res, err := http.ReadResponse(r, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("proxy: %s", res.Status)
	}
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
	if res, err = http.ReadResponse(r, nil); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("through the proxy: %s", res.Status)
	}
	return nil
}

// probeAgent is the scripted agent of TestMain's "sandboxed" mode: a real process whose
// script "probe" runs the actions of the file probe.txt in its directory itself, not
// through a terminal, and says the results.
func probeAgent() error {
	run := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
		data, err := os.ReadFile("probe.txt")
		if err != nil {
			return err
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText(probe(strings.Fields(string(data)))))
	}
	return acptest.Run(context.Background(), os.Stdin, os.Stdout, acptest.Config{Scripts: map[string]acptest.Script{"probe": run}})
}

// probeCommand is a shell command that runs the probe actions in the sandbox.
func probeCommand(t *testing.T, actions ...string) string {
	return "CONCH_ACP_TEST_AGENT=probe " + testExe(t) + " " + strings.Join(actions, " ")
}

// outsiders are what no sandbox may touch: the database, another task's directory, the
// server's home, a user's SSH key, the server's root through /proc; and the writes that
// must fail.
func outsiders(t *testing.T, env *testEnv) (reads, writes []string) {
	t.Helper()
	other := t.TempDir() // another task's worktree
	secret := filepath.Join(other, "secret.txt")
	key := filepath.Join(t.TempDir(), ".ssh", "id_ed25519") // someone's home
	for _, f := range []string{secret, key} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("private"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	server := fmt.Sprintf("/proc/%d", os.Getpid())
	reads = []string{"read", filepath.Join(env.dir, "conch.db"), "read", secret, "read", key, "list", home,
		"list", server + "/root/", "read", server + "/environ", "list", other, "read", "/etc/shadow"}
	writes = []string{"write", filepath.Join(env.dir, "planted"), "write", filepath.Join(other, "planted"),
		"write", filepath.Join(os.TempDir(), "conch-sandbox-planted")}
	return reads, writes
}

// denied checks that every action of the probe's output failed with the kernel's
// refusal, and that the output has one line per action.
func denied(t *testing.T, out string, actions []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(actions)/2 {
		t.Fatalf("probe said %d lines for %d actions:\n%s", len(lines), len(actions)/2, out)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, "permission denied") && !strings.HasSuffix(l, "operation not permitted") {
			t.Errorf("not refused by the sandbox: %s", l)
		}
	}
}

// The built-in shell agent, a real process, and its commands: they read and write their
// own directory, home and temporary directory, and nothing else of the host.
func TestSandboxShellAgent(t *testing.T) {
	t.Parallel()
	env := newEnv(t, shellProcess(t), true)
	sess := env.start(t, ShellAgent)
	if sess.Sandbox == nil || sess.Sandbox.Off || sess.Sandbox.Network != shared.NetworkAll || len(sess.Sandbox.Dirs) != 1 ||
		sess.Sandbox.Dirs[0] != sess.Cwd || !strings.HasPrefix(sess.Sandbox.Home, filepath.Join(env.dir, "sandboxes")) {
		t.Fatalf("session's sandbox %+v", sess.Sandbox)
	}
	reads, writes := outsiders(t, env)
	env.prompt(t, sess.ID, probeCommand(t, append(reads, writes...)...))
	_, out := lastShell(t, env, sess.ID)
	denied(t, out.Stdout, append(reads, writes...))

	// Its own: the directory, HOME and TMPDIR (private, under the data directory).
	env.prompt(t, sess.ID, `echo mine > here.txt && cat here.txt && echo h > "$HOME/h" && mktemp >/dev/null && echo "$HOME $TMPDIR"`)
	_, out = lastShell(t, env, sess.ID)
	if want := "mine\n" + sess.Sandbox.Home + " " + filepath.Join(filepath.Dir(sess.Sandbox.Home), "tmp") + "\n"; out.Stdout != want || *out.ExitCode != 0 {
		t.Errorf("own files: %q (%s), want %q", out.Stdout, out.Stderr, want)
	}
	// The kernel's refusal reaches the person as the command's output.
	env.prompt(t, sess.ID, "cat "+filepath.Join(env.dir, "conch.db"))
	_, out = lastShell(t, env, sess.ID)
	if *out.ExitCode == 0 || !strings.Contains(out.Stderr, "Permission denied") {
		t.Errorf("cat of the database: exit %v, %q", *out.ExitCode, out.Stderr)
	}
}

// sqlite3 run by an agent cannot make anyone an admin: the database is out of its reach.
func TestSandboxKeepsTheDatabase(t *testing.T) {
	t.Parallel()
	sqlite, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 is not installed (.ci/run installs it)")
	}
	env := newEnv(t, shellProcess(t), true)
	sess := env.start(t, ShellAgent)
	db := filepath.Join(env.dir, "conch.db")
	env.prompt(t, sess.ID, sqlite+" "+db+` "update accounts set role = 'admin'; create table planted (x)"`)
	_, out := lastShell(t, env, sess.ID)
	if *out.ExitCode == 0 {
		t.Fatalf("sqlite3 changed the database: %q %q", out.Stdout, out.Stderr)
	}
	if !strings.Contains(out.Stderr, "unable to open database") {
		t.Errorf("sqlite3 said %q", out.Stderr)
	}
	check, err := sql.Open("sqlite3", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	var n int
	if err := check.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'planted'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("planted table: %d, %v", n, err)
	}
}

// A scripted ACP agent, a real process, is confined as its commands are: its own reads and
// writes of the host fail.
func TestSandboxScriptedAgent(t *testing.T) {
	t.Parallel()
	exe := testExe(t)
	env := newEnv(t, testAgent(exe, "sandboxed"), true, Profile{Name: "scripted", Command: exe})
	sess := env.start(t, "scripted")
	reads, writes := outsiders(t, env)
	actions := append(reads, writes...)
	if err := os.WriteFile(filepath.Join(sess.Cwd, "probe.txt"), []byte(strings.Join(actions, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	env.prompt(t, sess.ID, "probe")
	said := env.texts(t, sess.ID, shared.TypeMessage, shared.AuthorAgent)
	if len(said) == 0 {
		t.Fatal("the agent said nothing")
	}
	denied(t, said[len(said)-1], actions)
}

// Network none: not even the host's loopback; all (the default) reaches it.
func TestSandboxNetworkNone(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	none := Profile{Name: "offline", Command: "", Args: BuiltinShell().Args, Permission: PermissionAllow,
		Sandbox: SandboxConfig{Network: Network{Policy: shared.NetworkNone}}}
	env := newEnv(t, shellProcess(t), true, none)
	for agent, want := range map[string]string{ShellAgent: "ok", "offline": "connection refused"} {
		sess := env.start(t, agent)
		env.prompt(t, sess.ID, probeCommand(t, "dial", ln.Addr().String()))
		_, out := lastShell(t, env, sess.ID)
		if !strings.HasSuffix(strings.TrimSpace(out.Stdout), want) {
			t.Errorf("%s: %q %q, want %s", agent, out.Stdout, out.Stderr, want)
		}
	}
}

// Network hosts: only the listed hosts, through the egress proxy; not the others, and
// nothing directly.
func TestSandboxNetworkHosts(t *testing.T) {
	t.Parallel()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") }))
	defer site.Close()
	port := strconv.Itoa(site.Listener.Addr().(*net.TCPAddr).Port)
	listed := Profile{Name: "listed", Args: BuiltinShell().Args, Permission: PermissionAllow,
		Sandbox: SandboxConfig{Network: Network{Policy: shared.NetworkHosts, Hosts: []string{"localhost"}}}}
	env := newEnv(t, shellProcess(t), true, listed)
	sess := env.start(t, "listed")
	if sess.Sandbox.Network != shared.NetworkHosts || strings.Join(sess.Sandbox.Hosts, ",") != "localhost" {
		t.Errorf("sandbox %+v", sess.Sandbox)
	}
	env.prompt(t, sess.ID, probeCommand(t, "proxy", "localhost:"+port, "proxy", "127.0.0.1:"+port, "dial", "127.0.0.1:"+port))
	_, out := lastShell(t, env, sess.ID)
	want := "proxy localhost:" + port + ": ok\n" +
		"proxy 127.0.0.1:" + port + ": proxy: 403 Forbidden\n" +
		"dial 127.0.0.1:" + port + ": dial tcp 127.0.0.1:" + port + ": connect: connection refused\n"
	if out.Stdout != want {
		t.Errorf("probe:\n%s%s\nwant:\n%s", out.Stdout, out.Stderr, want)
	}
}

// The tools of a worktree work inside the sandbox: git, a Go build of a module, npm,
// python3 and a pseudo-terminal (each where the machine has it).
func TestSandboxToolchains(t *testing.T) {
	if testing.Short() {
		t.Skip("builds Go's standard library in a fresh cache")
	}
	t.Parallel()
	env := newEnv(t, shellProcess(t), true)
	sess := env.start(t, ShellAgent)
	files := map[string]string{"go.mod": "module hello\n\ngo 1.26\n", "main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"built\") }\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(sess.Cwd, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	steps := map[string]string{
		"git":     "git init -q && git add . && git -c user.name=t -c user.email=t@example.com commit -qm one && git log --format=%s",
		"go":      "go build -o hello . && ./hello",
		"npm":     "npm init -y >/dev/null && test -f package.json && echo made",
		"python3": "python3 -c 'import tempfile; tempfile.mkstemp(); print(True)'",
		"script":  "script -qc 'echo in a pty' /dev/null", // openpty(3), as Gemini CLI's shell tool
	}
	wants := map[string]string{"git": "one\n", "go": "built\n", "npm": "made\n", "python3": "True\n", "script": "in a pty\r\n"}
	for _, tool := range []string{"git", "go", "npm", "python3", "script"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Logf("%s is not installed here", tool)
			continue
		}
		env.prompt(t, sess.ID, steps[tool])
		_, out := lastShell(t, env, sess.ID)
		if out.Stdout != wants[tool] || out.ExitCode == nil || *out.ExitCode != 0 {
			t.Errorf("%s: %q %q", tool, out.Stdout, out.Stderr)
		}
	}
}

// A profile's sandbox in the agents file: paths made absolute, the network a word or a list.
func TestProfileSandbox(t *testing.T) {
	home, _ := os.UserHomeDir()
	list, err := parseProfiles([]byte(`[{"name": "a", "command": "x", "pass_env": ["API_KEY"],
		"sandbox": {"read": ["/opt/tools"], "write": ["~/.npm"], "network": ["api.example.com", "*.example.org"]}}]`))
	if err != nil {
		t.Fatal(err)
	}
	sb := list[0].Sandbox
	if sb.Write[0] != filepath.Join(home, ".npm") || sb.Network.Policy != shared.NetworkHosts || len(sb.Network.Hosts) != 2 {
		t.Errorf("%+v", sb)
	}
	data, _ := json.Marshal(list[0].Sandbox)
	if string(data) != `{"read":["/opt/tools"],"write":["`+filepath.Join(home, ".npm")+`"],"network":["api.example.com","*.example.org"]}` {
		t.Errorf("%s", data)
	}
	for _, bad := range []string{`{"network": "some"}`, `{"network": []}`, `{"network": ["a/b"]}`, `{"network": ["*"]}`,
		`{"read": ["relative"]}`, `{"network": 3}`, `{"other": 1}`} {
		if _, err := parseProfiles([]byte(`[{"name": "a", "command": "x", "sandbox": ` + bad + `}]`)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := parseProfiles([]byte(`[{"name": "a", "command": "x", "pass_env": ["CONCH_TOKEN"]}]`)); err == nil {
		t.Error("pass_env CONCH_TOKEN accepted")
	}
}

// An agent gets the environment its profile names, not the server's.
func TestSandboxEnvironment(t *testing.T) {
	t.Setenv("CONCH_SANDBOX_SECRET", "server's")
	t.Setenv("CONCH_SANDBOX_KEY", "passed")
	p := Profile{Name: "p", PassEnv: []string{"CONCH_SANDBOX_KEY"}, Env: map[string]string{"MINE": "1"}}
	box, err := newBox(p, "s1", t.TempDir(), nil, "", t.TempDir(), "/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(box.env, "\n")
	for _, want := range []string{"CONCH_SANDBOX_KEY=passed", "MINE=1", "HOME=", "TMPDIR=", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("no %s in\n%s", want, env)
		}
	}
	if strings.Contains(env, "CONCH_SANDBOX_SECRET") {
		t.Errorf("the server's variable reached the agent:\n%s", env)
	}
}

// In a task's worktree git works (status, commit, log), while the repository's other
// worktrees, beside it in the git directory, stay out of reach.
func TestSandboxWorktree(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	gitDir := filepath.Join(repo, ".git")
	trees := filepath.Join(gitDir, "conch-worktrees")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "one"},
		{"worktree", "add", "-q", "-b", "conch/mine", filepath.Join(trees, "mine")},
		{"worktree", "add", "-q", "-b", "conch/other", filepath.Join(trees, "other")}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args, err, out)
		}
	}
	env := newEnv(t, shellProcess(t), true)
	mine := filepath.Join(trees, "mine")
	if _, err := env.st.SetTaskWorktree(context.Background(), env.task.ID, "conch/mine", mine); err != nil {
		t.Fatal(err)
	}
	sess, err := env.m.StartSession(context.Background(), env.task.ID, ShellAgent, mine)
	if err != nil || sess.State != shared.SessionReady {
		t.Fatalf("%s %s %v", sess.State, sess.Error, err)
	}
	env.prompt(t, sess.ID, "echo x > f && git add f && git -c user.name=t -c user.email=t@example.com commit -qm two && git log --format=%s")
	_, out := lastShell(t, env, sess.ID)
	if out.Stdout != "two\none\n" || *out.ExitCode != 0 {
		t.Errorf("git in the worktree: %q %q", out.Stdout, out.Stderr)
	}
	env.prompt(t, sess.ID, probeCommand(t, "list", filepath.Join(trees, "other"), "write", filepath.Join(gitDir, "planted")))
	_, out = lastShell(t, env, sess.ID)
	denied(t, out.Stdout, []string{"list", "", "write", ""})
}
