package acp

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
	"conch/shared"
)

// The client's file methods reach only the session's directory: a path outside it, a
// relative one, or a symlink that resolves outside it is refused with a clear error, and
// nothing is read or written. A write inside is recorded as a diff.
func TestFilesInsideTheSessionOnly(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("keep out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var results []string // what each call answered, in order
	try := func(what string, err error) {
		if err == nil {
			results = append(results, what+": ok")
			return
		}
		var re *sdk.RequestError
		if !errors.As(err, &re) {
			results = append(results, what+": "+err.Error())
			return
		}
		results = append(results, what+": "+strconv.Itoa(re.Code)+" "+re.Message)
	}
	var cwd string
	env := newEnv(t, scripted(map[string]script{
		"files": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			read := func(path string, line, limit *int) string {
				r, err := a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: path, Line: line, Limit: limit})
				try("read "+strings.TrimPrefix(path, cwd), err)
				return r.Content
			}
			write := func(path, content string) {
				_, err := a.Conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: path, Content: content})
				try("write "+strings.TrimPrefix(path, cwd), err)
			}
			write(filepath.Join(cwd, "src/main.go"), "package main\n\nfunc main() {}\n")
			write(filepath.Join(cwd, "src/main.go"), "package main\n\nfunc main() { run() }\n")
			if got := read(filepath.Join(cwd, "src/main.go"), sdk.Ptr(3), sdk.Ptr(1)); got != "func main() { run() }\n" {
				results = append(results, "read line 3: "+got)
			}
			read(secret, nil, nil)
			read(filepath.Join(cwd, "../"+filepath.Base(outside)+"/secret.txt"), nil, nil)
			read("src/main.go", nil, nil)
			read(filepath.Join(cwd, "escape/secret.txt"), nil, nil)
			write(filepath.Join(cwd, "escape/secret.txt"), "pwned\n")
			write(filepath.Join(cwd, "link.txt"), "pwned\n")
			read(filepath.Join(cwd, "missing.txt"), nil, nil)
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	cwd = sess.Cwd
	if err := os.Symlink(outside, filepath.Join(cwd, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(cwd, "link.txt")); err != nil {
		t.Fatal(err)
	}
	env.prompt(t, sess.ID, "files")

	want := []string{
		"write /src/main.go: ok",
		"write /src/main.go: ok",
		"read /src/main.go: ok",
		"read " + secret + ": -32602 Invalid params: " + secret + " is outside the session's directory",
		"read " + filepath.Join(cwd, "../"+filepath.Base(outside)+"/secret.txt") + ": -32602 Invalid params: ",
		"read src/main.go: -32602 Invalid params: path \"src/main.go\" is not absolute",
		"read /escape/secret.txt: -32602 Invalid params: " + filepath.Join(cwd, "escape/secret.txt") + " resolves outside the session's directory",
		"write /escape/secret.txt: -32602 Invalid params: " + filepath.Join(cwd, "escape/secret.txt") + " resolves outside the session's directory",
		"write /link.txt: -32602 Invalid params: " + filepath.Join(cwd, "link.txt") + " resolves outside the session's directory",
		// ACP's resource-not-found, its title in the message: what agents (Gemini CLI) read as "create it"
		"read /missing.txt: -32002 Resource not found: " + filepath.Join(cwd, "missing.txt") + " does not exist",
	}
	if len(results) != len(want) {
		t.Fatalf("results:\n%s", strings.Join(results, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(results[i], w[:strings.Index(w, ": ")]) || !strings.Contains(results[i], w[strings.Index(w, ": ")+2:]) {
			t.Errorf("call %d: %s\nwant %s", i, results[i], w)
		}
	}
	if data, _ := os.ReadFile(secret); string(data) != "keep out\n" {
		t.Errorf("the file outside was changed: %q", data)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files outside: %d, want only the secret", len(entries))
	}

	// Each write is recorded as a completed edit with its diff.
	var writes []shared.Message
	for _, m := range env.messages(t, sess.ID) {
		if m.Metadata != nil && strings.HasPrefix(m.Metadata.ToolCallID, "conch-write-") {
			writes = append(writes, m)
		}
	}
	if len(writes) != 2 {
		t.Fatalf("%d writes recorded, want 2", len(writes))
	}
	second := shared.ToolContentOf(writes[1])
	if writes[1].Metadata.Status != shared.StatusCompleted || writes[1].Metadata.Title != "Write "+filepath.Join(cwd, "src/main.go") ||
		second == nil || *second.Items[0].AddedLines != 1 || *second.Items[0].RemovedLines != 1 {
		t.Errorf("second write recorded as %+v %+v", writes[1].Metadata, second)
	}
	if first := shared.ToolContentOf(writes[0]); *first.Items[0].OldBytes != 0 || *first.Items[0].AddedLines != 3 {
		t.Errorf("first write (a new file) recorded as %+v", first.Items[0])
	}
}

// A permission the system denies is no fault of the agent's request: an internal error
// that says so (this runs as root in CI, where no file can deny a read, so the root's
// error is given directly).
func TestFilePermissionDenied(t *testing.T) {
	t.Parallel()
	err := rootError("/w/a.txt", &fs.PathError{Op: "openat", Path: "a.txt", Err: syscall.EACCES})
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != -32603 || re.Message != "Internal error: /w/a.txt: permission denied" {
		t.Errorf("permission denied answers %v", err)
	}
}

// threads is how many threads this process has (the runtime under test runs in it).
func threads(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// What an agent's own commands can leave in its directory is refused before anything is
// read, with an error that says why: a FIFO (whose open would wait for a writer forever,
// holding a thread), a hard link to a file outside, and a sparse file over the size a
// request may load (a write used to read it whole for its diff). The server stays up
// meanwhile and nothing outside changes.
func TestFilesHostileKinds(t *testing.T) {
	t.Parallel()
	const fifoRequests = 200
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("keep out\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var (
		cwd     string
		mu      sync.Mutex
		answers = map[string]int{} // "read fifo: <error>" → how many
	)
	note := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			answers[what+": ok"]++
			return
		}
		answers[what+": "+err.Error()]++
	}
	env := newEnv(t, scripted(map[string]script{
		"files": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			ctx, cancel := context.WithTimeout(ctx, waittest.Limit(t)) // a request left waiting fails the test, not hangs it
			defer cancel()
			read := func(name string) {
				_, err := a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(cwd, name)})
				note("read "+name, err)
			}
			write := func(name string) {
				_, err := a.Conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: filepath.Join(cwd, name), Content: "pwned\n"})
				note("write "+name, err)
			}
			var wg sync.WaitGroup
			for range fifoRequests {
				wg.Go(func() { read("fifo") })
				wg.Go(func() { write("fifo") })
			}
			wg.Wait()
			for _, name := range []string{"hard.txt", "sparse"} {
				read(name)
				write(name)
			}
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	cwd = sess.Cwd
	if err := syscall.Mkfifo(filepath.Join(cwd, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(cwd, "hard.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, "sparse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Just over the limit, not 100 GB: without the check the write would read it whole,
	// and this machine is shared.
	if err := os.Truncate(filepath.Join(cwd, "sparse"), readFileLimit+1); err != nil {
		t.Fatal(err)
	}
	before := threads(t)
	env.prompt(t, sess.ID, "files")

	want := map[string]int{
		"read fifo: is not a regular file":  fifoRequests,
		"write fifo: is not a regular file": fifoRequests,
		"read hard.txt: has 2 hard links":   1,
		"write hard.txt: has 2 hard links":  1,
		"read sparse: is 67108865 bytes":    1,
		"write sparse: is 67108865 bytes":   1,
	}
	got := map[string]int{}
	for answer, n := range answers {
		for w := range want {
			what, why, _ := strings.Cut(w, ": ")
			if strings.HasPrefix(answer, what+": ") && strings.Contains(answer, why) {
				got[w] += n
			}
		}
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("%q answered %d times, want %d; all answers:\n%v", w, got[w], n, answers)
		}
	}
	// The refused opens left no thread behind (each blocked open held one before).
	if after := threads(t); after > before+fifoRequests/4 {
		t.Errorf("threads went from %d to %d", before, after)
	}
	if data, _ := os.ReadFile(secret); string(data) != "keep out\n" {
		t.Errorf("the file outside was changed: %q", data)
	}
	if fi, err := os.Stat(filepath.Join(cwd, "sparse")); err != nil || fi.Size() != readFileLimit+1 {
		t.Errorf("the sparse file was changed: %v %v", fi.Size(), err)
	}
}

// Picking lines costs no memory per line: a file of 8 Mi empty lines used to be split
// into 8 Mi strings (128 MiB of headers) to answer one. Not parallel: the process's
// allocation count would include the other tests'.
func TestReadLinesBoundedMemory(t *testing.T) {
	var (
		cwd     string
		content string
		alloc   uint64
		err     error
	)
	env := newEnv(t, scripted(map[string]script{
		"lines": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			start := ms.TotalAlloc
			var r sdk.ReadTextFileResponse
			r, err = a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(cwd, "lines"), Line: sdk.Ptr(4 << 20), Limit: sdk.Ptr(2)})
			runtime.ReadMemStats(&ms)
			alloc, content = ms.TotalAlloc-start, r.Content
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	cwd = sess.Cwd
	text := strings.Repeat("\n", 8<<20-1) + "last"
	if err := os.WriteFile(filepath.Join(cwd, "lines"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env.prompt(t, sess.ID, "lines")
	if err != nil || content != "\n\n" {
		t.Fatalf("read lines: %q, %v", content, err)
	}
	if alloc > 4*uint64(len(text)) {
		t.Errorf("reading 2 lines of a %d-byte file allocated %d bytes", len(text), alloc)
	}
}

// File requests together hold at most loadBudget bytes: a request that would pass it is
// refused with the reason, and answered again once the bytes are given back.
func TestFileLoadsWithinBudget(t *testing.T) {
	t.Parallel()
	var cwd string
	var answers []string
	env := newEnv(t, scripted(map[string]script{
		"read": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			r, err := a.Conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: filepath.Join(cwd, "a.txt")})
			if err != nil {
				answers = append(answers, err.Error())
			} else {
				answers = append(answers, "ok: "+r.Content)
			}
			return nil
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	cwd = sess.Cwd
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !env.m.local.loads.TryAcquire(loadBudget - 3) { // other requests hold all but 3 bytes
		t.Fatal("the budget is taken")
	}
	env.prompt(t, sess.ID, "read")
	env.m.local.loads.Release(loadBudget - 3)
	env.prompt(t, sess.ID, "read")
	if len(answers) != 2 || !strings.Contains(answers[0], "its most at once") || answers[1] != "ok: hello\n" {
		t.Fatalf("answers: %q", answers)
	}
	if !env.m.local.loads.TryAcquire(loadBudget) {
		t.Error("a request kept its bytes after its answer")
	}
}

// One edit the agent reports as its own tool call and also writes through the client is
// one diff: the write is the diff of the agent's call, whether the call showed the diff
// before the write (as when asking permission), only after it, or the call was reported
// only after the write. A write no call of the agent's claims is a tool call of its own.
func TestAgentEditWrittenThroughConchIsOneDiff(t *testing.T) {
	t.Parallel()
	var cwd string
	const (
		diffFirst  = iota // the call shows the diff, then the agent writes
		diffLater         // the call, the write, then the diff
		writeFirst        // the write, then the call (with only a location of the file)
	)
	edit := func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId, id, name string, order int) error {
		path := filepath.Join(cwd, name)
		diff := []sdk.ToolCallContent{sdk.ToolDiffContent(path, "print('hi')\n")}
		write := func() error {
			_, err := a.Conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: path, Content: "print('hi')\n"})
			return err
		}
		start := []sdk.ToolCallStartOpt{sdk.WithStartKind(sdk.ToolKindEdit), sdk.WithStartStatus(sdk.ToolCallStatusInProgress),
			sdk.WithStartLocations([]sdk.ToolCallLocation{{Path: path}})}
		if order == diffFirst {
			start = append(start, sdk.WithStartContent(diff))
		}
		steps := []func() error{
			func() error {
				return a.Send(ctx, sid, sdk.StartToolCall(sdk.ToolCallId(id), "WriteFile "+name, start...))
			},
			write,
		}
		if order == writeFirst {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
		return a.Send(ctx, sid, sdk.UpdateToolCall(sdk.ToolCallId(id), sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted), sdk.WithUpdateContent(diff)))
	}
	env := newEnv(t, scripted(map[string]script{
		"edits": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			for i, name := range []string{"hello.py", "world.py", "late.py"} {
				if err := edit(ctx, a, sid, "w"+strconv.Itoa(i+1), name, i); err != nil {
					return err
				}
			}
			_, err := a.Conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: filepath.Join(cwd, "notes.txt"), Content: "x\n"})
			return err
		},
	}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	cwd = sess.Cwd
	env.prompt(t, sess.ID, "edits")
	diffs := map[string]int{} // path -> diffs shown
	calls := []string{}
	for _, m := range env.messages(t, sess.ID) {
		if c := shared.ToolContentOf(m); c != nil {
			calls = append(calls, m.Metadata.ToolCallID)
			for _, it := range c.Items {
				if it.Type == shared.ContentDiff {
					diffs[strings.TrimPrefix(it.Path, cwd+"/")]++
				}
			}
		}
	}
	if want := map[string]int{"hello.py": 1, "world.py": 1, "late.py": 1, "notes.txt": 1}; !maps.Equal(diffs, want) || len(calls) != 4 ||
		calls[0] != "w1" || calls[1] != "w2" || calls[2] != "w3" || !strings.HasPrefix(calls[3], "conch-write-") {
		t.Errorf("diffs %v in tool calls %v; want one diff each, in w1, w2, w3 and a write of Conch's", diffs, calls)
	}
}
