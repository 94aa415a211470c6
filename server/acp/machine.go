package acp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/creack/pty"
	"github.com/google/uuid"
	"golang.org/x/sync/semaphore"

	"conch/server/worktree"
	"conch/shared"
)

// Machine is the one seam between a session's logic (the loop, the recorder, the store,
// permissions: always on the server) and the host its agent runs on: this one (Local) or
// a runner's (Remote, wire.go). Everything of a session that touches a host's files or
// processes goes through its Machine: its directory, its sandbox, its agent, the commands
// the agent and a person's terminal run, and the agent's file requests. The arguments are
// plain data, since paths are the machine's: each sandbox is built on the machine from
// the profile and the session's directories.
type Machine interface {
	// Dir checks that dir is a directory of the machine; "" makes a fresh one, whose path
	// it returns. A missing directory is shared.CodeInvalid.
	Dir(ctx context.Context, dir string) (string, error)
	// Sandbox makes w's sandbox (its private home) and says what it is.
	Sandbox(ctx context.Context, w Work) (shared.Sandbox, error)
	// Agent starts w's agent in w's directory and sandbox.
	Agent(ctx context.Context, w Work) (*Process, error)
	// Start starts a command in its work's sandbox.
	Start(ctx context.Context, c Command) (Proc, error)
	// ReadFile answers an agent's fs/read_text_file within its roots (fs.go).
	ReadFile(ctx context.Context, r FileRead) (string, error)
	// WriteFile answers an agent's fs/write_text_file within its roots and returns the
	// text it replaced (nil: the file is new).
	WriteFile(ctx context.Context, r FileWrite) (*string, error)
	// Forget removes w's sandbox's own directory (its home and tmp).
	Forget(ctx context.Context, w Work) error
	// Workspace runs an operation on the worktree of a task made from its repo_url on
	// this machine (worktree.Do): makes it, the session's directory, or reads, commits
	// or pushes its change.
	Workspace(ctx context.Context, op worktree.Op) (worktree.Result, error)
}

// Work is what a machine builds a session's sandbox from.
type Work struct {
	Session string   `json:"session"` // names the sandbox's own directory
	Profile Profile  `json:"profile"` // the agent, its env and pass_env, its sandbox
	Dir     string   `json:"dir"`     // the session's directory
	Dirs    []string `json:"dirs,omitempty"`
	Tree    string   `json:"tree,omitempty"` // the task's worktree, "" without
}

// Command is a process to start in its work's sandbox.
type Command struct {
	Work  Work     `json:"work"`
	Path  string   `json:"path"` // "" runs the machine's conch binary
	Args  []string `json:"args,omitempty"`
	Env   []string `json:"env,omitempty"` // added to the sandbox's
	Dir   string   `json:"dir"`
	Stdin bool     `json:"stdin,omitempty"` // a pipe to its stdin; without, it reads /dev/null
	TTY   *Size    `json:"tty,omitempty"`   // stdio on a terminal of this size instead of pipes
}

// Size is a terminal's.
type Size struct {
	Cols int `json:"cols"`
	Rows int `json:"rows"`
}

// FileRead is an agent's read of a text file, Line and Limit as ACP has them.
type FileRead struct {
	Roots []string `json:"roots"` // the session's directory, then the task's other directories
	Path  string   `json:"path"`
	Line  *int     `json:"line,omitempty"`
	Limit *int     `json:"limit,omitempty"`
}

// FileWrite is an agent's write of a text file.
type FileWrite struct {
	Roots   []string `json:"roots"`
	Path    string   `json:"path"`
	Content string   `json:"content"`
}

// Proc is a process started on a machine.
type Proc interface {
	Stdin() io.WriteCloser // nil unless asked for (Command.Stdin, TTY)
	Stdout() io.ReadCloser // with a TTY, what the terminal shows
	Stderr() io.ReadCloser // nil with a TTY
	// Signal sends sig to the whole process group; false once the process is reaped.
	Signal(sig syscall.Signal) bool
	Resize(s Size) error // a TTY's size
	// Wait waits until the process has ended and says how.
	Wait() (exitStatus, error)
}

// LocalConfig is this host as a machine.
type LocalConfig struct {
	DataDir    string   // sessions/ holds fresh session directories, sandboxes/ the sandboxes' own
	Executable string   // the conch binary: ns-init, and the built-in agent
	NoSandbox  bool     // run unconfined (serve --no-sandbox)
	Repos      []string // the repo_url patterns its tasks may name (worktree.Host), none: any
	Launch     Launcher
	Logger     *slog.Logger
}

// local is this host: today's processes, sandboxes and files.
type local struct {
	cfg   LocalConfig
	loads *semaphore.Weighted // the bytes file requests hold (fs.go)
}

// Local is this host as a session's machine. Launch starts agents (nil:
// ExecLauncher(Executable)); tests give agents joined by io.Pipe.
func Local(cfg LocalConfig) Machine { return newLocal(cfg) }

func newLocal(cfg LocalConfig) *local {
	if cfg.Launch == nil {
		cfg.Launch = ExecLauncher(cfg.Executable)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &local{cfg: cfg, loads: semaphore.NewWeighted(loadBudget)}
}

func (l *local) Dir(_ context.Context, dir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(l.cfg.DataDir, "sessions", uuid.Must(uuid.NewV7()).String())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("session directory: %w", err)
		}
		return dir, nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", shared.Errorf(shared.CodeInvalid, "cwd %s is not a directory", dir)
	}
	return dir, nil
}

// box builds w's sandbox here.
func (l *local) box(w Work) (*Box, error) {
	if err := checkWork(w); err != nil {
		return nil, err
	}
	box := unconfined(w.Profile)
	if !l.cfg.NoSandbox {
		var err error
		if box, err = newBox(w.Profile, w.Session, w.Dir, w.Dirs, w.Tree, l.cfg.DataDir, l.cfg.Executable); err != nil {
			return nil, err
		}
	}
	box.log = l.cfg.Logger.With("session", w.Session)
	return box, nil
}

// checkWork refuses a work whose sandbox would not be its own directory: its session
// names a directory under DataDir/sandboxes, and its paths are the machine's, absolute.
func checkWork(w Work) error {
	if w.Session == "" || w.Session == "." || w.Session == ".." || strings.ContainsAny(w.Session, "/\x00") {
		return fmt.Errorf("sandbox: %q is not a session's name", w.Session)
	}
	for _, d := range slices.Concat([]string{w.Dir}, w.Dirs) {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("sandbox: %q is not an absolute path", d)
		}
	}
	return nil
}

func (l *local) Sandbox(_ context.Context, w Work) (shared.Sandbox, error) {
	box, err := l.box(w)
	if err != nil {
		return shared.Sandbox{}, err
	}
	return box.info, nil
}

func (l *local) Agent(_ context.Context, w Work) (*Process, error) {
	box, err := l.box(w)
	if err != nil {
		return nil, err
	}
	return l.cfg.Launch(w.Profile, w.Dir, box)
}

func (l *local) Start(_ context.Context, c Command) (Proc, error) {
	box, err := l.box(c.Work)
	if err != nil {
		return nil, err
	}
	return startProc(c, l.cfg.Executable, box)
}

func (l *local) Forget(_ context.Context, w Work) error {
	if err := checkWork(w); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(l.cfg.DataDir, "sandboxes", w.Session))
}

// sessionDir is the directory of a session of task on mach (named runner): the task's
// worktree there for a task on a repo_url (placeWorktree), else cwd checked, or a fresh
// one when cwd is "".
func sessionDir(ctx context.Context, task shared.Task, mach Machine, runner, cwd string) (string, error) {
	if task.RepoURL != "" {
		return placeWorktree(ctx, task, mach, runner)
	}
	return mach.Dir(ctx, cwd)
}

// placeWorktree makes the worktree of a task on a repo_url on the runner a session of it
// was placed on (named runner), and returns its path there: the session's directory.
func placeWorktree(ctx context.Context, task shared.Task, mach Machine, runner string) (string, error) {
	if runner == "" {
		return "", shared.Errorf(shared.CodeConflict, "the task's repository is cloned on runners (repo_url): start a session of an agent whose profile names runner_labels")
	}
	res, err := mach.Workspace(ctx, worktree.Op{Op: worktree.OpMake, URL: task.RepoURL, Base: task.BaseBranch, Branch: task.Branch})
	if err != nil {
		return "", fmt.Errorf("the task's worktree on runner %s: %w", runner, err)
	}
	return res.Dir, nil
}

// Workspace keeps the clones of task repositories under DataDir/repos.
func (l *local) Workspace(ctx context.Context, op worktree.Op) (worktree.Result, error) {
	return worktree.Do(ctx, worktree.Host{Dir: l.cfg.DataDir, Repos: l.cfg.Repos}, op)
}

// startProc starts c here, in box, as startGroup does; exe is the conch binary.
func startProc(c Command, exe string, box *Box) (Proc, error) {
	path := c.Path
	if path == "" {
		path = exe
	}
	cmd := exec.Command(path, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = slices.Concat(box.env, c.Env)
	p := &localProc{}
	if c.TTY != nil {
		ptmx, tty, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("terminal: %w", err)
		}
		defer tty.Close()
		p.ptmx = ptmx
		if err := p.Resize(*c.TTY); err != nil {
			ptmx.Close()
			return nil, err
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	} else if c.Stdin {
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		p.stdin = stdin
	}
	g, err := startGroup(cmd, exe, box, c.TTY != nil)
	if err != nil {
		for _, f := range []io.Closer{p.stdin, p.ptmx} {
			if f != nil {
				f.Close()
			}
		}
		return nil, err
	}
	p.g = g
	return p, nil
}

// localProc is a process started here: a group (process.go), on a PTY or pipes.
type localProc struct {
	g     *group
	stdin io.WriteCloser
	ptmx  *os.File
}

func (p *localProc) Stdin() io.WriteCloser {
	if p.ptmx != nil {
		return p.ptmx
	}
	return p.stdin
}

func (p *localProc) Stdout() io.ReadCloser {
	if p.ptmx != nil {
		return p.ptmx
	}
	return p.g.stdout
}

func (p *localProc) Stderr() io.ReadCloser {
	if p.ptmx != nil {
		return nil
	}
	return p.g.stderr
}

func (p *localProc) Signal(sig syscall.Signal) bool { return p.g.signal(sig) }

func (p *localProc) Resize(s Size) error {
	if p.ptmx == nil {
		return fmt.Errorf("not a terminal")
	}
	if s.Cols < 1 || s.Rows < 1 || s.Cols > maxCols || s.Rows > maxRows {
		return fmt.Errorf("a terminal is 1 to %d columns and 1 to %d rows, not %dx%d", maxCols, maxRows, s.Cols, s.Rows)
	}
	return pty.Setsize(p.ptmx, &pty.Winsize{Cols: uint16(s.Cols), Rows: uint16(s.Rows)})
}

func (p *localProc) Wait() (exitStatus, error) { return p.g.wait() }
