package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"conch/app/client"
	"conch/server/servetest"
	"conch/server/waittest"
	"conch/shared"
)

// readmeCommands is every command of README.md's sh blocks, in order (without its
// comment; a heredoc with its lines). TestReadme fails when the README and this list
// differ, so that a changed command is looked at here: it runs, or skip says why not.
var readmeCommands = []struct {
	cmd, skip string
	check     func(t *testing.T, r *readme, cmd string)
}{
	{cmd: "make run", skip: "builds in the repository and serves on 127.0.0.1:8080; TestMakeNeeds checks what it needs"},
	{cmd: "make test", skip: "this test runs under it"},
	{cmd: "make quick", skip: "runs this package's tests again: a subset of make test"},
	{cmd: "cat > agents.json <<'EOF'\n" +
		`[{"name": "gemini", "description": "Gemini CLI", "command": "gemini", "args": ["--acp"], "no_read_text_file": true,` + "\n" +
		`  "auth_method": "gemini-api-key", "pass_env": ["GEMINI_API_KEY"]},` + "\n" +
		` {"name": "claude", "command": "npx", "args": ["-y", "@agentclientprotocol/claude-agent-acp"], "permission": "ask",` + "\n" +
		`  "pass_env": ["ANTHROPIC_API_KEY"], "sandbox": {"write": ["~/.npm"]}}]` + "\n" +
		"EOF", check: runs},
	{cmd: "export GEMINI_API_KEY=... ANTHROPIC_API_KEY=...", check: runs},
	{cmd: "make run CONCH_AGENTS=agents.json ADDR=127.0.0.1:9000",
		skip: "builds in the repository; the server of the next command starts with this CONCH_AGENTS, as make run passes it"},
	{cmd: "bin/conch serve --db ./conch.db", check: serves},
	{cmd: "bin/conch agent shell", check: runs},       // with no client on its stdin, it ends cleanly
	{cmd: "bin/conch agent shell --ask", check: runs}, // likewise
	{cmd: "bin/conch help", check: func(t *testing.T, r *readme, cmd string) {
		out, _ := r.sh(t, cmd, 0)
		for _, c := range commands {
			if !strings.Contains(out, "conch "+c.Name+" ") {
				t.Errorf("%s does not list %s:\n%s", cmd, c.Name, out)
			}
		}
	}},
	{cmd: "createuser -P conch && createdb -O conch conch", skip: "needs a PostgreSQL server, as its postgres user"},
	{cmd: "bin/conch serve --db 'postgres://conch:PASSWORD@127.0.0.1:5432/conch?sslmode=disable'", skip: "needs that PostgreSQL server"},
	{cmd: "CONCH_DB=postgres://conch@db.internal/conch?sslmode=require bin/conch prune --older-than 720h", skip: "needs a PostgreSQL server on another host"},
	{cmd: `bin/conch serve --addr 10.0.0.11:8080 --db "$DB" --token "$TOKEN" --trusted-proxy 10.0.0.2`, skip: "listens on another host's address"},
	{cmd: `bin/conch serve --addr 10.0.0.12:8080 --db "$DB" --token "$TOKEN" --trusted-proxy 10.0.0.2`, skip: "listens on another host's address"},
	{cmd: "bin/conch run -- go test ./...", check: func(t *testing.T, r *readme, cmd string) {
		// The directory is a Go module with a passing test: the command tests it.
		out, errs := r.sh(t, cmd, 0)
		if !regexp.MustCompile(`(?m)^ok\s+readme\b`).MatchString(out) {
			t.Errorf("%s did not test the current directory: stdout\n%s\nstderr\n%s", cmd, out, errs)
		}
		m := regexp.MustCompile(`session (\S+)`).FindStringSubmatch(errs)
		if m == nil {
			t.Fatalf("%s did not name its session:\n%s", cmd, errs)
		}
		r.session, r.stdout = m[1], out
	}},
	{cmd: "bin/conch tasks", check: func(t *testing.T, r *readme, cmd string) {
		if out, _ := r.sh(t, cmd, 0); !strings.Contains(out, r.session) {
			t.Errorf("%s does not list session %s:\n%s", cmd, r.session, out)
		}
	}},
	{cmd: "bin/conch output MESSAGE_ID", check: func(t *testing.T, r *readme, cmd string) {
		page, err := client.New(r.server).ListMessages(context.Background(), shared.ListRequest{SessionID: r.session})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(page.Messages, func(m shared.Message) bool { return shared.ShellOf(m) != nil })
		if i < 0 {
			t.Fatalf("session %s has no command", r.session)
		}
		if out, _ := r.sh(t, strings.Replace(cmd, "MESSAGE_ID", page.Messages[i].ID, 1), 0); out != r.stdout {
			t.Errorf("%s gave %q, want what run printed, %q", cmd, out, r.stdout)
		}
	}},
	{cmd: "bin/conch tail SESSION_ID", check: func(t *testing.T, r *readme, cmd string) {
		c := r.command(context.Background(), "exec "+strings.Replace(cmd, "SESSION_ID", r.session, 1)) // as its own job
		var errs syncBuffer
		c.Stderr = &errs
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		waittest.Until(t, func() bool { return strings.Contains(errs.String(), "following live") })
		// Interrupted, as a person at a terminal ends it.
		if err := syscall.Kill(-c.Process.Pid, syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(); err != nil || !strings.Contains(errs.String(), "$ go test ./...") {
			t.Errorf("%s: %v\n%s", cmd, err, errs.String())
		}
	}},
	{cmd: "bin/conch export TASK_ID > t.tar.gz", check: func(t *testing.T, r *readme, cmd string) {
		sess, err := client.New(r.server).GetSession(context.Background(), r.session)
		if err != nil {
			t.Fatal(err)
		}
		r.sh(t, strings.Replace(cmd, "TASK_ID", sess.TaskID, 1), 0)
		if b, err := os.ReadFile(filepath.Join(r.dir, "t.tar.gz")); err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s wrote no gzip file: %.20q, %v", cmd, b, err)
		}
	}},
	{cmd: "bin/conch import t.tar.gz", check: func(t *testing.T, r *readme, cmd string) {
		out, _ := r.sh(t, cmd, 0)
		tasks, err := client.New(r.server).ListTasks(context.Background())
		if err != nil || len(tasks) != 2 || !strings.HasPrefix(out, tasks[0].ID+"\t") {
			t.Errorf("%s: %q; the tasks %+v, %v", cmd, out, tasks, err)
		}
	}},
	{cmd: "bin/conch prune --older-than 720h", check: func(t *testing.T, r *readme, cmd string) {
		if out, _ := r.sh(t, cmd, 0); out != "deleted 0 tasks idle for more than 720h0m0s\n" {
			t.Errorf("%s: %q", cmd, out)
		}
	}},
	{cmd: `CONCH_TOKEN="$TOKEN" CONCH_OIDC_CLIENT_SECRET="$SECRET" bin/conch serve --addr 10.0.0.11:8080 --db "$DB" --oidc-issuer https://idp.example.com --oidc-client-id conch --oidc-groups conch-admins=admin,developers=member --oidc-default-role viewer`,
		skip: "needs an identity provider and listens on another host's address; app/e2e's TestSingleSignOn signs in through a real one"},
	{cmd: `curl -s -H "Authorization: Bearer $TOKEN" -d '{"role":"member"}' https://conch.example.com/api/v1/accounts`, skip: "a server on another host; TestAccountsAndTokens makes invitations"},
	{cmd: `curl -s -H "Authorization: Bearer $CONCH_TOKEN" -d '{"days":7}' https://conch.example.com/api/v1/tasks/TASK_ID/links`, skip: "a server on another host; TestGuestSeesOnlyItsTask makes links"},
	{cmd: `curl -s -H "Authorization: Bearer $CONCH_TOKEN" "https://conch.example.com/api/v1/audit?from=2026-12-01T00:00:00Z" > audit.jsonl`, skip: "a server on another host; TestTaskOwnersEditorsAndAudit reads the audit"},
	{cmd: `bin/conch serve --addr 10.0.0.11:8080 --db "$DB" --token "$TOKEN" --push-contact ops@example.com`, skip: "listens on another host's address; app/e2e's TestPushOptInAndNotification pushes through a server"},
	{cmd: `CONCH_TOKEN="$TOKEN" bin/conch runners --server https://conch.example.com token gpu-pool > runner.token`, skip: "needs that server; TestCLIRunners makes, lists and revokes runner tokens"},
	{cmd: "bin/conch runner --server https://conch.example.com --token-file runner.token --labels gpu,os=linux --capacity 4 --dir /srv/conch",
		skip: "needs that server; TestRunnerProcess runs a runner against a real server"},
	{cmd: `CONCH_TOKEN="$TOKEN" bin/conch runners --server https://conch.example.com`, skip: "needs that server; TestRunnerProcess lists a runner"},
	{cmd: "docker build -f server/deploy/Containerfile -t conch-runner .", skip: "no container engine here; server/deploy's TestContainerfile parses the file"},
	{cmd: "kubectl apply -f server/deploy/kubernetes/runner.yaml", skip: "no cluster here; server/deploy's TestKubernetes parses the manifest"},
	{cmd: `kubectl -n conch-runners create secret generic conch-runner --from-literal=token="$(CONCH_TOKEN="$TOKEN" bin/conch runners --server https://conch.example.com token k8s-pool)"`,
		skip: "no cluster here; TestCLIRunners makes runner tokens"},
}

// readme is where README.md's commands run: a directory with bin/conch (the binary under
// test) and a Go module, and what one command leaves to the next.
type readme struct {
	dir, bin string
	env      []string
	server   string // the base URL of the server the commands started
	session  string // the session of conch run
	stdout   string // what conch run printed on stdout
}

// command is cmd for sh in r's directory and environment, in a process group of its own,
// which the end of ctx kills.
func (r *readme) command(ctx context.Context, cmd string) *exec.Cmd {
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Dir, c.Env = r.dir, r.env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	return c
}

// sh runs cmd to its end and fails the test unless it exits with want. A command that
// hangs is killed, with its process group, at waittest.Limit, so that the failure names
// it; a slow machine only makes it slower.
func (r *readme) sh(t *testing.T, cmd string, want int) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waittest.Limit(t))
	defer cancel()
	c := r.command(ctx, cmd)
	var out, errs bytes.Buffer
	c.Stdout, c.Stderr, c.WaitDelay = &out, &errs, time.Second
	err := c.Run()
	if c.ProcessState == nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	if got := c.ProcessState.ExitCode(); got != want {
		t.Fatalf("%s: exit status %d (%v), want %d\nstdout:\n%s\nstderr:\n%s", cmd, got, err, want, out.String(), errs.String())
	}
	return out.String(), errs.String()
}

func runs(t *testing.T, r *readme, cmd string) { r.sh(t, cmd, 0) }

// serves starts the server of the README on a port of its own (CONCH_ADDR; the README's
// is 8080) with the agents file written before, and points the commands after it there.
func serves(t *testing.T, r *readme, cmd string) {
	c := r.command(context.Background(), "exec "+cmd) // as its own job, which the signal below stops
	c.Env = slices.Concat(r.env, []string{"CONCH_ADDR=127.0.0.1:0", "CONCH_AGENTS=agents.json"})
	var logs syncBuffer
	c.Stderr = &logs
	r.server = servetest.Start(t, c, waittest.Limit(t), &logs)
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		if err := c.Wait(); err != nil {
			t.Errorf("%s: %v\n%s", cmd, err, logs.String())
		}
	})
	r.env = append(r.env, "CONCH_SERVER="+r.server)
	agents, err := client.New(r.server).Agents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range agents {
		names = append(names, a.Name)
	}
	if !slices.Equal(names, []string{"shell", "gemini", "claude"}) {
		t.Errorf("the server offers %v, want shell and the README's two", names)
	}
}

// shellBlocks returns the commands of markdown's sh blocks: one a line, without a comment
// that follows it, a heredoc with its lines.
func shellBlocks(markdown string) []string {
	var cmds []string
	in, heredoc := false, ""
	for line := range strings.Lines(markdown) {
		line = strings.TrimRight(line, "\n")
		switch {
		case !in:
			in = line == "```sh"
		case heredoc != "":
			cmds[len(cmds)-1] += "\n" + line
			if line == heredoc {
				heredoc = ""
			}
		case line == "```":
			in = false
		case strings.TrimSpace(line) != "":
			cmd := strings.TrimSpace(regexp.MustCompile(`\s+# .*$`).ReplaceAllString(line, ""))
			if m := regexp.MustCompile(`<<'(\w+)'$`).FindStringSubmatch(cmd); m != nil {
				heredoc = m[1]
			}
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}

// The README's shell commands, run as a newcomer would against a fresh build, each but
// those that need what a test machine lacks (another host, a PostgreSQL user) or that
// build in the repository.
func TestReadme(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, c := range readmeCommands {
		listed = append(listed, c.cmd)
	}
	if got := shellBlocks(string(raw)); !slices.Equal(got, listed) {
		t.Fatalf("README.md's commands are not those readmeCommands handles: update the list\nREADME.md:\n%s\n\nthe list:\n%s",
			strings.Join(got, "\n"), strings.Join(listed, "\n"))
	}

	bin := servetest.Bin(t)
	r := &readme{dir: t.TempDir()}
	// bin/conch as the README says it, a Go module for conch run -- go test ./...
	files := map[string]string{
		"go.mod":         "module readme\n\ngo 1.26\n",
		"readme_test.go": "package readme\n\nimport \"testing\"\n\nfunc TestReadme(t *testing.T) {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(r.dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(r.dir, "bin", "conch")); err != nil {
		t.Fatal(err)
	}
	// The caller's Conch settings stay out; the default database is the directory's.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CONCH_") {
			r.env = append(r.env, kv)
		}
	}
	r.env = append(r.env, "CONCH_DB="+filepath.Join(r.dir, "conch.db"))

	for _, c := range readmeCommands {
		if c.skip != "" {
			t.Logf("not run: %s (%s)", c.cmd, c.skip)
			continue
		}
		c.check(t, r, c.cmd)
	}
}

// make run says what it needs, in README.md's words, and stops before building when Go
// (or a recent enough one) or a C compiler is missing.
func TestMakeNeeds(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	oldGo := filepath.Join(t.TempDir(), "go")
	if err := os.WriteFile(oldGo, []byte("#!/bin/sh\necho go1.26.7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, why string
		args, env []string
	}{
		{"all there", "", nil, nil},
		{"no go", "/nonexistent/go is not on PATH", []string{"GO=/nonexistent/go"}, nil},
		{"an old go", oldGo + " is go1.26.7", []string{"GO=" + oldGo}, nil},
		{"no C compiler", "/nonexistent/cc cannot build C", nil, []string{"CC=/nonexistent/cc"}},
	} {
		cmd := exec.Command(makeBin, append([]string{"-s", "-C", "..", "needs"}, c.args...)...)
		cmd.Env = append(os.Environ(), c.env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if c.why == "" {
			if err != nil {
				t.Errorf("%s: %v\n%s", c.name, err, out.String())
			}
			continue
		}
		said, _, _ := strings.Cut(out.String(), "\n") // make's own line of the failure follows
		needs, why, _ := strings.Cut(said, "; ")
		if err == nil || why != c.why {
			t.Errorf("%s: %v, said %q; want a failure that says %q", c.name, err, out.String(), c.why)
		}
		if !strings.Contains(strings.ReplaceAll(string(readme), "`", ""), "\n"+needs+".\n") {
			t.Errorf("%s: README.md lacks the line %q", c.name, needs)
		}
	}
}
