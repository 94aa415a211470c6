package acp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
	"golang.org/x/sync/semaphore"

	"conch/server/store"
	"conch/server/worktree"
	"conch/shared"
)

// The wire between the server (Remote) and a runner (ServeMachine): every operation of a
// Machine, and every process it starts, is one stream of its own (a yamux stream over
// the runner's WebSocket). A stream is a sequence of frames: a kind byte, a payload
// length (4 bytes, big-endian) and the payload. The server sends a request (JSON) and,
// for a write, the file's text as a body; the runner answers with a reply (JSON) and, for
// a read or the text a write replaced, a body. A process's stream goes on: the server
// sends its stdin, signals and terminal sizes, the runner its stdout and stderr as they
// come and, last, how it exited; then the runner closes the stream.
//
// The server takes nothing from a runner on trust: each kind of frame has its bound and
// a frame of a kind the stream does not expect is refused, the stream is then closed; a
// reply is decoded strictly and checked (a directory is the one asked for, a file's text
// is UTF-8 within what fs.go answers, an exit's signal is a signal's name, an error's
// words are cut). The runner bounds what it reads from the server alike.

// Frame kinds.
const (
	frameRequest byte = 'q' // server: the operation (wireRequest)
	frameBody    byte = 'b' // a file's text
	frameReply   byte = 'r' // runner: the operation's answer (wireReply)
	frameStdin   byte = 'i' // server: bytes for the process's stdin
	frameEOF     byte = 'c' // server: its stdin ends
	frameSignal  byte = 's' // server: a signal for its process group (wireSignal)
	frameResize  byte = 'z' // server: its terminal's size (Size)
	frameStdout  byte = 'o' // runner: bytes the process wrote
	frameStderr  byte = 'e'
	frameExit    byte = 'x' // runner: how it ended (wireExit), the stream's last frame
)

const (
	requestLimit = 1 << 20  // a request's JSON: a profile, a command line
	jsonLimit    = 64 << 10 // a reply's, an exit's, a signal's or a size's JSON
	dataLimit    = 32 << 10 // a frame of stdio; longer writes go in several
	wordLimit    = 1 << 10  // an error's words from a runner, cut to this
	resultLimit  = 4 << 20  // a workspace operation's result: a worktree's changes, file by file
	stdinQueue   = 256      // frames of stdin a runner keeps for a process that is not reading them
)

// Operations.
const (
	opDir       = "dir"
	opSandbox   = "sandbox"
	opStart     = "start"
	opRead      = "read"
	opWrite     = "write"
	opForget    = "forget"
	opWorkspace = "workspace"
)

// ErrRunnerGone is what every call and process of a runner whose connection ended answers.
var ErrRunnerGone = errors.New("the runner's connection ended")

type wireRequest struct {
	Op        string       `json:"op"`
	Dir       string       `json:"dir,omitempty"`
	Work      *Work        `json:"work,omitempty"`    // sandbox, forget
	Command   *Command     `json:"command,omitempty"` // start
	Read      *FileRead    `json:"read,omitempty"`
	Write     *FileWrite   `json:"write,omitempty"` // its Content travels as a body
	Workspace *worktree.Op `json:"workspace,omitempty"`
}

type wireReply struct {
	Error   *wireError      `json:"error,omitempty"`
	Dir     string          `json:"dir,omitempty"`
	Sandbox *shared.Sandbox `json:"sandbox,omitempty"`
	Body    bool            `json:"body,omitempty"` // a body follows: a read's text, the text a write replaced, a workspace's result (JSON)
}

// wireError is an error as it crosses: a file request's JSON-RPC code and reason (fs.go),
// or a shared.Error's code, or words alone.
type wireError struct {
	Message string `json:"message"`
	RPC     int    `json:"rpc,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Code    string `json:"code,omitempty"`
}

type wireSignal struct {
	Signal int `json:"signal"`
}

type wireExit struct {
	Code   *int   `json:"code,omitempty"`
	Signal string `json:"signal,omitempty"`
	Error  string `json:"error,omitempty"`
}

// frames writes frames to a stream, one writer at a time.
type frames struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frames) send(kind byte, p []byte) error {
	buf := make([]byte, 5, 5+len(p))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:], uint32(len(p)))
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.w.Write(append(buf, p...))
	return err
}

func (f *frames) sendJSON(kind byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return f.send(kind, data)
}

// sendData sends p in frames of at most dataLimit.
func (f *frames) sendData(kind byte, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), dataLimit)
		if err := f.send(kind, p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// readFrame reads one frame of a kind in limits, whose payload is within that kind's
// limit; anything else is an error, and the stream is of no more use.
func readFrame(r io.Reader, limits map[byte]int) (byte, []byte, error) {
	kind, n, err := readHeader(r, limits)
	if err != nil {
		return 0, nil, err
	}
	p, err := readPayload(r, kind, n)
	return kind, p, err
}

// readHeader reads a frame's kind and length, refusing what readFrame refuses.
func readHeader(r io.Reader, limits map[byte]int) (byte, int, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, err
	}
	limit, ok := limits[h[0]]
	if !ok {
		return 0, 0, fmt.Errorf("wire: a frame of kind %q where none is expected", h[0])
	}
	n := binary.BigEndian.Uint32(h[1:])
	if uint64(n) > uint64(limit) {
		return 0, 0, fmt.Errorf("wire: a frame of kind %q of %d bytes, over its %d", h[0], n, limit)
	}
	return h[0], int(n), nil
}

// readPayload reads the n bytes of a frame of kind whose header was read.
func readPayload(r io.Reader, kind byte, n int) ([]byte, error) {
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("wire: a frame of kind %q cut short: %w", kind, err)
	}
	return p, nil
}

// decode reads JSON strictly: one value, no field this side does not know.
func decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	if dec.More() {
		return errors.New("wire: more than one value in a frame")
	}
	return nil
}

// toWire is err as it crosses to the server.
func toWire(err error) *wireError {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		w := &wireError{Message: re.Message, RPC: re.Code}
		if d, ok := re.Data.(map[string]any); ok {
			w.Reason, _ = d["error"].(string)
		}
		return w
	}
	var se *shared.Error
	if errors.As(err, &se) {
		return &wireError{Message: se.Message, Code: se.Code}
	}
	return &wireError{Message: err.Error()}
}

// err is a runner's error as the server takes it: a file request's answer with one of
// the codes fs.go answers, a request refused (shared.CodeInvalid), a worktree's state in
// the way or git's time up (CodeConflict, CodeTimeout), or words; each cut.
func (w *wireError) err() error {
	switch {
	case codeTitles[w.RPC] != "":
		return requestError(w.RPC, "%s", store.CutText(w.Reason, wordLimit))
	case w.Code == shared.CodeInvalid, w.Code == shared.CodeConflict, w.Code == shared.CodeTimeout:
		return shared.Errorf(w.Code, "%s", store.CutText(w.Message, wordLimit))
	}
	return fmt.Errorf("runner: %s", store.CutText(w.Message, wordLimit))
}

// remote is a runner's machine as the server sees it.
type remote struct {
	open func(ctx context.Context) (net.Conn, error)
	gone <-chan struct{}
}

// Remote is a runner's machine: each operation, and each process, opens a stream with
// open, served on the runner by ServeMachine. gone is closed when the runner's
// connection ends: from then on each call fails at once, and each of its processes reads
// as exited with ErrRunnerGone. ctx bounds an operation, and a process's start.
func Remote(open func(ctx context.Context) (net.Conn, error), gone <-chan struct{}) Machine {
	return &remote{open: open, gone: gone}
}

// dial opens a stream, closed when ctx ends or the runner goes before stop is called.
func (r *remote) dial(ctx context.Context) (net.Conn, func(), error) {
	select {
	case <-r.gone:
		return nil, nil, ErrRunnerGone
	default:
	}
	conn, err := r.open(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("reach the runner: %w", err)
	}
	done := make(chan struct{})
	var stopped sync.WaitGroup
	stopped.Add(1)
	go func() {
		defer stopped.Done()
		select {
		case <-ctx.Done():
			conn.Close()
		case <-r.gone:
			conn.Close()
		case <-done:
		}
	}()
	return conn, func() { close(done); stopped.Wait() }, nil
}

// lost is why a stream failed: the runner went, ctx ended before it answered, or err.
func (r *remote) lost(ctx context.Context, err error) error {
	select {
	case <-r.gone:
		return ErrRunnerGone
	default:
	}
	if ctx.Err() != nil {
		return fmt.Errorf("runner: no answer: %w", ctx.Err())
	}
	return fmt.Errorf("runner: %w", err)
}

// call runs one operation: req (and body, a write's text), then the reply and, when it
// says one follows, a body of at most bodyLimit.
func (r *remote) call(ctx context.Context, req wireRequest, body []byte, bodyLimit int) (wireReply, []byte, error) {
	conn, stop, err := r.dial(ctx)
	if err != nil {
		return wireReply{}, nil, err
	}
	defer stop()
	defer conn.Close()
	f := &frames{w: conn}
	err = f.sendJSON(frameRequest, req)
	if err == nil && req.Write != nil {
		err = f.send(frameBody, body)
	}
	if err != nil {
		return wireReply{}, nil, r.lost(ctx, err)
	}
	reply, err := r.reply(ctx, conn)
	if err != nil || !reply.Body {
		return reply, nil, err
	}
	_, n, err := readHeader(conn, map[byte]int{frameBody: bodyLimit})
	if err != nil {
		return wireReply{}, nil, r.lost(ctx, err)
	}
	// Each body is within its bound, but a runner answers many requests at once: its
	// bodies take their size from the same kind of budget as files loaded here (fs.go).
	if !runnerLoads.TryAcquire(int64(n)) {
		return wireReply{}, nil, requestError(codeInternal, "the server is receiving %d MiB of files from runners for agents, its most at once: ask again when your other requests are answered", loadBudget>>20)
	}
	defer runnerLoads.Release(int64(n))
	if body, err = readPayload(conn, frameBody, n); err != nil {
		return wireReply{}, nil, r.lost(ctx, err)
	}
	return reply, body, nil
}

// runnerLoads bounds the bytes of the file bodies all runners' answers hold at once.
var runnerLoads = semaphore.NewWeighted(loadBudget)

// reply reads an operation's reply; the runner's error is returned as an error.
func (r *remote) reply(ctx context.Context, conn net.Conn) (wireReply, error) {
	var reply wireReply
	_, data, err := readFrame(conn, map[byte]int{frameReply: jsonLimit})
	if err == nil {
		err = decode(data, &reply)
	}
	if err != nil {
		return wireReply{}, r.lost(ctx, err)
	}
	if reply.Error != nil {
		return wireReply{}, reply.Error.err()
	}
	return reply, nil
}

func (r *remote) Dir(ctx context.Context, dir string) (string, error) {
	reply, _, err := r.call(ctx, wireRequest{Op: opDir, Dir: dir}, nil, 0)
	if err != nil {
		return "", err
	}
	got := reply.Dir
	if !machinePath(got) || (dir != "" && got != dir) {
		return "", fmt.Errorf("runner: %q is not the session's directory", store.CutText(got, wordLimit))
	}
	return got, nil
}

// machinePath says whether a runner's path may be a session's directory: absolute,
// clean, text, within a path's bound.
func machinePath(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && utf8.ValidString(p) && len(p) <= shared.MaxPathBytes
}

func (r *remote) Workspace(ctx context.Context, op worktree.Op) (worktree.Result, error) {
	reply, body, err := r.call(ctx, wireRequest{Op: opWorkspace, Workspace: &op}, nil, resultLimit)
	if err == nil && !reply.Body {
		err = errors.New("runner: no result in its reply")
	}
	if err != nil {
		return worktree.Result{}, err
	}
	var res worktree.Result
	if err := decode(body, &res); err != nil {
		return worktree.Result{}, fmt.Errorf("runner: %w", err)
	}
	if !machinePath(res.Dir) {
		return worktree.Result{}, fmt.Errorf("runner: %q is not a worktree's path", store.CutText(res.Dir, wordLimit))
	}
	return res, nil
}

func (r *remote) Sandbox(ctx context.Context, w Work) (shared.Sandbox, error) {
	reply, _, err := r.call(ctx, wireRequest{Op: opSandbox, Work: &w}, nil, 0)
	if err == nil && reply.Sandbox == nil {
		err = errors.New("runner: no sandbox in its reply")
	}
	if err != nil {
		return shared.Sandbox{}, err
	}
	return *reply.Sandbox, nil
}

func (r *remote) Agent(ctx context.Context, w Work) (*Process, error) {
	c := agentCommand(w.Profile, w.Dir)
	c.Work = w
	p, err := r.Start(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmp.Or(w.Profile.Command, "the conch binary"), err)
	}
	return agentProcess(p), nil
}

func (r *remote) ReadFile(ctx context.Context, fr FileRead) (string, error) {
	reply, body, err := r.call(ctx, wireRequest{Op: opRead, Read: &fr}, nil, readAnswerLimit)
	switch {
	case err != nil:
		return "", err
	case !reply.Body:
		return "", errors.New("runner: no text in its reply")
	case !utf8.Valid(body):
		return "", fmt.Errorf("runner: the text of %s is not UTF-8", fr.Path)
	}
	return string(body), nil
}

func (r *remote) WriteFile(ctx context.Context, fw FileWrite) (*string, error) {
	content := []byte(fw.Content)
	fw.Content = ""
	reply, body, err := r.call(ctx, wireRequest{Op: opWrite, Write: &fw}, content, readFileLimit)
	if err != nil || !reply.Body {
		return nil, err
	}
	old := string(body)
	return &old, nil
}

func (r *remote) Forget(ctx context.Context, w Work) error {
	_, _, err := r.call(ctx, wireRequest{Op: opForget, Work: &w}, nil, 0)
	return err
}

// signalNamePattern is what a runner may say ended a process: a signal's POSIX name.
var signalNamePattern = regexp.MustCompile(`^SIG[A-Z0-9+-]{1,12}$`)

// killGrace is how long a killed process of a runner may take to say it ended before
// it is taken for ended (a runner that does not answer).
const killGrace = endGrace

func (r *remote) Start(ctx context.Context, c Command) (Proc, error) {
	conn, stop, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	f := &frames{w: conn}
	if err := f.sendJSON(frameRequest, wireRequest{Op: opStart, Command: &c}); err != nil {
		stop()
		conn.Close()
		return nil, r.lost(ctx, err)
	}
	_, err = r.reply(ctx, conn)
	stop()
	if err != nil {
		conn.Close()
		return nil, err
	}
	p := &remoteProc{r: r, conn: conn, f: f, tty: c.TTY != nil, done: make(chan struct{}), killed: make(chan struct{})}
	p.stdout, p.outW = io.Pipe()
	if !p.tty {
		p.stderr, p.errW = io.Pipe()
	}
	if c.Stdin || p.tty {
		p.stdin = stdinWriter{f}
	}
	go p.demux()
	go p.watch()
	return p, nil
}

// agentCommand is the command that starts p's agent in cwd.
func agentCommand(p Profile, cwd string) Command {
	return Command{Path: p.Command, Args: p.Args, Dir: cwd, Stdin: true}
}

// remoteProc is a process of a runner: its stream, read by demux.
type remoteProc struct {
	r            *remote
	conn         net.Conn
	f            *frames
	tty          bool
	stdin        io.WriteCloser
	stdout       *io.PipeReader
	stderr       *io.PipeReader
	outW, errW   *io.PipeWriter
	done, killed chan struct{}
	ender, kill  sync.Once
	status       exitStatus
	err          error
}

// demux hands the runner's frames to stdout and stderr until the exit, or until the
// stream fails (hostile frames, the runner gone).
func (p *remoteProc) demux() {
	limits := map[byte]int{frameStdout: dataLimit, frameExit: jsonLimit}
	if !p.tty {
		limits[frameStderr] = dataLimit
	}
	for {
		kind, data, err := readFrame(p.conn, limits)
		if err != nil {
			p.end(exitStatus{}, p.r.lost(context.Background(), err))
			return
		}
		switch kind {
		case frameStdout:
			_, _ = p.outW.Write(data) // a reader that stopped reading drops the rest
		case frameStderr:
			_, _ = p.errW.Write(data)
		case frameExit:
			p.end(exited(data))
			return
		}
	}
}

// exited reads a runner's exit frame.
func exited(data []byte) (exitStatus, error) {
	var x wireExit
	if err := decode(data, &x); err != nil {
		return exitStatus{}, fmt.Errorf("runner: %w", err)
	}
	if x.Signal != "" && !signalNamePattern.MatchString(x.Signal) {
		return exitStatus{}, fmt.Errorf("runner: %q is not a signal", store.CutText(x.Signal, wordLimit))
	}
	var err error
	if x.Error != "" {
		err = fmt.Errorf("runner: %s", store.CutText(x.Error, wordLimit))
	}
	return exitStatus{Code: x.Code, Signal: x.Signal}, err
}

// end records how the process ended, once: its output ends and Wait returns.
func (p *remoteProc) end(st exitStatus, err error) {
	p.ender.Do(func() {
		p.status, p.err = st, err
		p.conn.Close()
		p.outW.Close()
		if p.errW != nil {
			p.errW.Close()
		}
		close(p.done)
	})
}

// watch ends the process when the runner goes, or when a kill is not answered in time.
func (p *remoteProc) watch() {
	select {
	case <-p.done:
	case <-p.r.gone:
		p.end(exitStatus{}, ErrRunnerGone)
	case <-p.killed:
		t := time.NewTimer(killGrace)
		defer t.Stop()
		select {
		case <-p.done:
		case <-p.r.gone:
			p.end(exitStatus{}, ErrRunnerGone)
		case <-t.C:
			p.end(exitStatus{}, errors.New("runner: the process did not end when killed"))
		}
	}
}

func (p *remoteProc) Stdin() io.WriteCloser { return p.stdin }
func (p *remoteProc) Stdout() io.ReadCloser { return p.stdout }

func (p *remoteProc) Stderr() io.ReadCloser {
	if p.stderr == nil {
		return nil
	}
	return p.stderr
}

func (p *remoteProc) Signal(sig syscall.Signal) bool {
	select {
	case <-p.done:
		return false
	default:
	}
	err := p.f.sendJSON(frameSignal, wireSignal{Signal: int(sig)})
	if sig == syscall.SIGKILL {
		p.kill.Do(func() { close(p.killed) })
	}
	return err == nil
}

func (p *remoteProc) Resize(s Size) error {
	if !p.tty {
		return errors.New("not a terminal")
	}
	return p.f.sendJSON(frameResize, s)
}

func (p *remoteProc) Wait() (exitStatus, error) {
	<-p.done
	return p.status, p.err
}

// stdinWriter sends a remote process's stdin.
type stdinWriter struct{ f *frames }

func (w stdinWriter) Write(p []byte) (int, error) {
	if err := w.f.sendData(frameStdin, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w stdinWriter) Close() error { return w.f.send(frameEOF, nil) }

// ServeMachine serves one stream of the server's on a runner with m (Local): one
// operation, or one process until it has ended. It returns when the stream is done; a
// stream that breaks (the server gone) or ctx ending kills the process.
func ServeMachine(ctx context.Context, conn net.Conn, m Machine) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	f := &frames{w: conn}
	_, data, err := readFrame(conn, map[byte]int{frameRequest: requestLimit})
	if err != nil {
		return
	}
	var req wireRequest
	if err := decode(data, &req); err != nil {
		answer(f, wireReply{}, nil, err)
		return
	}
	switch {
	case req.Op == opDir:
		dir, err := m.Dir(ctx, req.Dir)
		answer(f, wireReply{Dir: dir}, nil, err)
	case req.Op == opSandbox && req.Work != nil:
		sb, err := m.Sandbox(ctx, *req.Work)
		answer(f, wireReply{Sandbox: &sb}, nil, err)
	case req.Op == opForget && req.Work != nil:
		answer(f, wireReply{}, nil, m.Forget(ctx, *req.Work))
	case req.Op == opRead && req.Read != nil:
		text, err := m.ReadFile(ctx, *req.Read)
		answer(f, wireReply{Body: true}, []byte(text), err)
	case req.Op == opWrite && req.Write != nil:
		_, body, err := readFrame(conn, map[byte]int{frameBody: readFileLimit})
		if err != nil {
			return
		}
		req.Write.Content = string(body)
		old, err := m.WriteFile(ctx, *req.Write)
		if old == nil {
			answer(f, wireReply{}, nil, err)
		} else {
			answer(f, wireReply{Body: true}, []byte(*old), err)
		}
	case req.Op == opWorkspace && req.Workspace != nil:
		res, err := m.Workspace(ctx, *req.Workspace)
		body, _ := json.Marshal(res) // strings and numbers: it cannot fail
		answer(f, wireReply{Body: true}, body, err)
	case req.Op == opStart && req.Command != nil:
		serveProc(ctx, conn, f, m, *req.Command)
	default:
		answer(f, wireReply{}, nil, fmt.Errorf("unknown operation %q", store.CutText(req.Op, 100)))
	}
}

// answer sends an operation's reply (err's alone, when there is one) and its body.
func answer(f *frames, reply wireReply, body []byte, err error) {
	if err != nil {
		reply = wireReply{Error: toWire(err)}
	}
	if f.sendJSON(frameReply, reply) == nil && reply.Body {
		_ = f.send(frameBody, body)
	}
}

// serveProc starts c with m and serves its stream until it has ended.
func serveProc(ctx context.Context, conn net.Conn, f *frames, m Machine, c Command) {
	proc, err := m.Start(ctx, c)
	if err != nil {
		answer(f, wireReply{}, nil, err)
		return
	}
	answer(f, wireReply{}, nil, nil)
	// stdin goes through a queue of its own, so that a process that does not read its
	// stdin never holds the server's signals back: one that lets stdinQueue frames wait
	// is killed.
	stdin := make(chan []byte, stdinQueue)
	go func() {
		in := proc.Stdin()
		for p := range stdin {
			if p == nil {
				in.Close()
				return
			}
			_, _ = in.Write(p)
		}
	}()
	go func() {
		defer close(stdin)
		limits := map[byte]int{frameSignal: jsonLimit, frameResize: jsonLimit}
		if proc.Stdin() != nil {
			limits[frameStdin], limits[frameEOF] = dataLimit, 0
		}
		for {
			kind, data, err := readFrame(conn, limits)
			if err != nil { // the server went, or broke the stream: the process goes too
				proc.Signal(syscall.SIGKILL)
				return
			}
			switch kind {
			case frameStdin:
				select {
				case stdin <- data:
				default:
					proc.Signal(syscall.SIGKILL)
				}
			case frameEOF:
				select {
				case stdin <- nil:
				default:
					proc.Signal(syscall.SIGKILL)
				}
				delete(limits, frameStdin)
				delete(limits, frameEOF)
			case frameSignal:
				var s wireSignal
				if decode(data, &s) == nil && s.Signal > 0 && s.Signal < 65 {
					proc.Signal(syscall.Signal(s.Signal))
				}
			case frameResize:
				var s Size
				if decode(data, &s) == nil {
					_ = proc.Resize(s)
				}
			}
		}
	}()
	var pumps sync.WaitGroup
	for kind, r := range map[byte]io.ReadCloser{frameStdout: proc.Stdout(), frameStderr: proc.Stderr()} {
		if r == nil {
			continue
		}
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			defer r.Close()
			buf := make([]byte, dataLimit)
			for {
				n, err := r.Read(buf)
				if n > 0 && f.send(kind, buf[:n]) != nil {
					proc.Signal(syscall.SIGKILL)
				}
				if err != nil {
					return
				}
			}
		}()
	}
	st, werr := proc.Wait()
	drained := make(chan struct{})
	go func() { pumps.Wait(); close(drained) }()
	grace := time.NewTimer(drainGrace) // a background child holding the pipes: the exit goes first
	select {
	case <-drained:
	case <-grace.C:
	}
	grace.Stop()
	x := wireExit{Code: st.Code, Signal: st.Signal}
	if werr != nil && st.Code == nil && st.Signal == "" {
		x.Error = werr.Error()
	}
	_ = f.sendJSON(frameExit, x)
}
