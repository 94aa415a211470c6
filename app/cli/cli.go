// Package cli is the conch command line for scripts and terminals: conch tasks, run,
// output and tail. It speaks only the public HTTP API and WebSocket, through app/client,
// so it works against any Conch server and imports no server package.
//
// A command's own output goes to stdout and stderr as the command wrote it; everything
// else (command rows, statuses, the agent's words) goes to stderr, so that
// `conch run -- make test | grep FAIL` sees only what make printed.
package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/sys/unix"

	"conch/app/client"
	"conch/shared"
)

// Command is one subcommand as its help shows it: `conch help` lists each command's
// synopsis and summary, and `conch help NAME` (or `conch NAME -h`) adds its flags.
type Command struct {
	Name, Args, Summary string
}

// Commands are the subcommands Run serves.
var Commands = []Command{
	{"tasks", "[flags]", "tasks with their sessions and states"},
	{"run", "[flags] -- COMMAND...", "send one prompt (for the shell agent, a command) to a new session working in\n" +
		"the current directory, and print it live; exits with the command's status"},
	{"output", "[flags] MESSAGE_ID", "a command's stored output, exact bytes: its stdout to stdout, its stderr to stderr"},
	{"tail", "[flags] SESSION_ID", "follow a session live until interrupted"},
	{"fork", "[flags] SESSION_ID MESSAGE_ID", "a new session from one of the agent's replies (Fork from here): prints the new\n" +
		"session; when the agent did not fork its own session, the draft summary to send next"},
	{"stop", "[flags] SESSION_ID", "stop the session's agent; the session stays, and its next prompt starts a new agent"},
	{"commit", "[flags] -m MESSAGE TASK_ID", "commit all of a task's uncommitted work on its branch"},
	{"merge", "[flags] TASK_ID", "bring a task's branch onto its base branch, locally; a conflict lists its files\n" +
		"and changes nothing"},
	{"push", "[flags] TASK_ID", "push a task's branch to its repository's remote origin"},
	{"export", "[flags] TASK_ID", "write a task's archive (a tar.gz of its sessions, messages, outputs, diffs, files\n" +
		"and costs) to --out, or to stdout"},
	{"import", "[flags] FILE", "make a new task on the server from an archive that conch export wrote (- reads\n" +
		"stdin); its sessions are closed and nothing in it runs; prints the new task"},
	{"attempts", "[flags] TASK_ID", "a task's attempts, compared; with --prompt and --agents, first give one prompt to\n" +
		"several agents, each in a worktree of its own (--check runs after each turn);\n" +
		"--keep N lands attempt N and closes the others"},
	{"agent-sessions", "[flags] --agent NAME TASK_ID", "an agent's own earlier sessions in the task's directory (ACP session/list), a\n" +
		"page at a time; --import ID,... imports them as sessions of the task, each\n" +
		"resuming its conversation at its first prompt"},
	{"runners", "[flags] [tokens | token NAME | revoke TOKEN_ID]", "the runners (conch runner) the server knows, with their labels and sessions;\n" +
		"tokens lists the runner tokens, token NAME makes one (its secret alone on stdout,\n" +
		"shown once), revoke drops the runners connected with one (admins only)"},
}

// Usage writes the synopsis and summary of each command.
func Usage(w io.Writer, commands []Command) {
	for _, c := range commands {
		fmt.Fprintf(w, "  conch %s %s\n", c.Name, c.Args)
		for line := range strings.Lines(c.Summary) {
			fmt.Fprintf(w, "        %s", line)
		}
		fmt.Fprintln(w)
	}
}

// Flags are the flags of one command, and its help.
type Flags struct {
	*flag.FlagSet
	cmd            Command
	stdout, stderr io.Writer
}

// Flags returns an empty flag set for c, whose help goes to stdout when asked for and to
// stderr after a mistake.
func (c Command) Flags(stdout, stderr io.Writer) *Flags {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Parse prints the help, the caller the error
	return &Flags{FlagSet: fs, cmd: c, stdout: stdout, stderr: stderr}
}

// Parse parses args. Asked for help (-h, --help), it prints it and returns flag.ErrHelp,
// which main ends with status 0.
func (f *Flags) Parse(args []string) error {
	err := f.FlagSet.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		f.help(f.stdout)
	case err != nil:
		f.help(f.stderr)
	}
	return err
}

// Fail prints the help to stderr and returns the mistake.
func (f *Flags) Fail(format string, args ...any) error {
	f.help(f.stderr)
	return fmt.Errorf("%s: %s", f.Name(), fmt.Sprintf(format, args...))
}

func (f *Flags) help(w io.Writer) {
	// The default of --token comes from CONCH_TOKEN: help must not print it.
	if t := f.Lookup("token"); t != nil {
		t.DefValue = ""
	}
	fmt.Fprintln(w, "usage:")
	Usage(w, []Command{f.cmd})
	fmt.Fprintln(w, "flags:")
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// ExitStatus is the status conch run ends with when the command did not succeed.
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// Run runs the subcommand args[0], one of Commands. A command that ran and failed is an
// ExitStatus.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	i := slices.IndexFunc(Commands, func(c Command) bool { return len(args) > 0 && c.Name == args[0] })
	if i < 0 {
		return errors.New("unknown command")
	}
	flags := Commands[i].Flags(stdout, stderr)
	server := flags.String("server", cmp.Or(os.Getenv("CONCH_SERVER"), "http://127.0.0.1:8080"), "the Conch server (env CONCH_SERVER)")
	token := flags.String("token", os.Getenv("CONCH_TOKEN"), "the server's token (env CONCH_TOKEN)")
	asJSON := flags.Bool("json", false, "print one JSON object per line, in the API's shapes, instead of text")
	var agent, task, repoURL, base, cwd, stream, message, mode, out *string
	var redact *bool
	var tries *attemptFlags
	var earlier *agentSessionFlags
	switch args[0] {
	case "attempts":
		tries = newAttemptFlags(flags)
	case "agent-sessions":
		earlier = newAgentSessionFlags(flags)
	case "export":
		out = flags.String("out", "", "the file to write (default: stdout)")
		redact = flags.Bool("redact", false, "replace secret-like strings (access tokens, API keys, private keys) with [REDACTED]")
	case "commit":
		message = flags.String("m", "", "the commit message (required)")
	case "merge":
		mode = flags.String("mode", "merge", "merge (a merge commit) or rebase (the branch rebased onto the base)")
	case "run":
		agent = flags.String("agent", "shell", "the agent profile")
		task = flags.String("task", "", "the task to add the session to (default: a new task)")
		repoURL = flags.String("repo-url", "", "a new task on this repository, cloned on runners (a URL git clones, or a path on the runners' disks); --cwd= then")
		base = flags.String("base-branch", "main", "with --repo-url: the branch the task's branch starts from")
		// A reader of `conch run -- go test ./...` expects it to test this directory. A
		// server on another host needs a directory of its own host, or --cwd= for a fresh
		// one there.
		here, _ := os.Getwd()
		cwd = flags.String("cwd", here, "the session's working directory on the server's host; empty: a fresh one")
	case "output":
		stream = flags.String("stream", "", "only stdout or stderr")
	}
	if err := flags.Parse(args[1:]); err != nil {
		return err
	}
	api := client.New(*server).WithToken(*token)
	p := &printer{api: api, stdout: stdout, stderr: stderr, seen: map[string]*seen{}}
	if *asJSON {
		p.json = json.NewEncoder(stdout)
	}
	rest := flags.Args()
	switch args[0] {
	case "tasks":
		if len(rest) != 0 {
			return flags.Fail("takes no arguments")
		}
		return tasks(ctx, api, stdout, p.json)
	case "run":
		if len(rest) == 0 {
			return flags.Fail("give the command after --")
		}
		if *repoURL != "" && *task != "" {
			return flags.Fail("--repo-url makes a new task: leave --task out")
		}
		return p.run(ctx, *agent, *task, *repoURL, *base, *cwd, prompt(rest))
	case "commit", "merge", "push":
		if len(rest) != 1 || message != nil && strings.TrimSpace(*message) == "" {
			return flags.Fail("give one TASK_ID, and -m MESSAGE to commit")
		}
		return land(ctx, api, args[0], rest[0], message, mode, stdout, stderr, p.json)
	case "export":
		if len(rest) != 1 {
			return flags.Fail("give one TASK_ID")
		}
		return export(ctx, api, rest[0], *out, *redact, stdout)
	case "import":
		if len(rest) != 1 {
			return flags.Fail("give one FILE, or - for stdin")
		}
		return importTask(ctx, api, rest[0], os.Stdin, stdout, p.json)
	case "attempts":
		if len(rest) != 1 {
			return flags.Fail("give one TASK_ID")
		}
		return tries.run(ctx, api, rest[0], stdout, p.json)
	case "agent-sessions":
		if len(rest) != 1 {
			return flags.Fail("give one TASK_ID")
		}
		return earlier.run(ctx, api, rest[0], stdout, stderr, p.json)
	case "runners":
		return runners(ctx, api, flags, rest, stdout, stderr, p.json)
	case "fork":
		if len(rest) != 2 {
			return flags.Fail("give one SESSION_ID and one MESSAGE_ID")
		}
		return fork(ctx, api, rest[0], rest[1], stdout, p.json)
	case "output":
		if len(rest) != 1 || (*stream != "" && *stream != "stdout" && *stream != "stderr") || (*stream != "" && *asJSON) {
			return flags.Fail("give one MESSAGE_ID, and --stream stdout or stderr if any (not with --json)")
		}
		return output(ctx, api, rest[0], *stream, stdout, stderr, p.json)
	}
	if len(rest) != 1 {
		return flags.Fail("give one SESSION_ID")
	}
	if args[0] == "stop" {
		_, err := api.StopAgent(ctx, rest[0])
		return err
	}
	return p.tail(ctx, rest[0])
}

// prompt joins a command's words: one word is taken as written (a whole shell line such
// as 'ls | wc -l'), several are quoted where the shell would split or expand them.
func prompt(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return shared.ShellJoin(words...)
}

// fork starts a session from a reply and prints it: its id and state, then the draft
// first prompt when there is one (or the answer as JSON).
func fork(ctx context.Context, api *client.Client, sessionID, messageID string, stdout io.Writer, asJSON *json.Encoder) error {
	f, err := api.Fork(ctx, sessionID, messageID)
	if err != nil {
		return err
	}
	if asJSON != nil {
		return asJSON.Encode(f)
	}
	how := "forked by the agent"
	if !f.Forked {
		how = "summarized: send the draft below, or your own words, as its first prompt"
	}
	if _, err := fmt.Fprintf(stdout, "%s\t%s\t%s\n", f.Session.ID, f.Session.State, how); err != nil || f.Draft == "" {
		return err
	}
	_, err = fmt.Fprintln(stdout, f.Draft)
	return err
}

// export writes a task's archive to the file out, or to stdout when out is "".
func export(ctx context.Context, api *client.Client, taskID, out string, redact bool, stdout io.Writer) error {
	archive, err := api.ExportTask(ctx, taskID, redact)
	if err != nil {
		return err
	}
	if out != "" {
		return os.WriteFile(out, archive, 0o600) // it may hold secrets: the owner's alone
	}
	_, err = stdout.Write(archive)
	return err
}

// importTask sends the archive in the file name ("-": stdin) to the server and prints the
// task it made.
func importTask(ctx context.Context, api *client.Client, name string, stdin io.Reader, stdout io.Writer, asJSON *json.Encoder) error {
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		stdin = f
	}
	archive, err := io.ReadAll(io.LimitReader(stdin, shared.MaxImportBytes+1))
	if err != nil {
		return err
	}
	if len(archive) > shared.MaxImportBytes {
		return fmt.Errorf("import: %s is larger than the %d MiB a server takes in one import", name, shared.MaxImportBytes>>20)
	}
	t, err := api.ImportTask(ctx, archive)
	if err != nil {
		return err
	}
	if asJSON != nil {
		return asJSON.Encode(t)
	}
	_, err = fmt.Fprintf(stdout, "%s\t%s\n", t.ID, t.Title)
	return err
}

func tasks(ctx context.Context, api *client.Client, stdout io.Writer, asJSON *json.Encoder) error {
	list, err := api.ListTasks(ctx)
	if err != nil {
		return err
	}
	if asJSON != nil {
		for _, t := range list {
			if err := asJSON.Encode(t); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tTITLE\tSESSION\tAGENT\tSTATE")
	for _, t := range list {
		if len(t.Sessions) == 0 {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\n", t.ID, oneLine(t.Title))
		}
		for i, s := range t.Sessions {
			id, title := t.ID, oneLine(t.Title)
			if i > 0 {
				id, title = "", ""
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", id, title, s.ID, s.Agent, s.State)
		}
	}
	return w.Flush()
}

// land runs one step of landing a task (commit, merge or push) and prints where the task
// then stands; a conflict's files go to stderr, one a line.
func land(ctx context.Context, api *client.Client, step, taskID string, message, mode *string, stdout, stderr io.Writer, asJSON *json.Encoder) error {
	var ch shared.Changes
	var err error
	switch step {
	case "commit":
		ch, err = api.Commit(ctx, taskID, *message)
	case "merge":
		ch, err = api.Merge(ctx, taskID, *mode)
	default:
		ch, err = api.Push(ctx, taskID)
	}
	for _, path := range shared.ConflictPaths(err) {
		fmt.Fprintf(stderr, "conflict: %s\n", shared.Visible(path))
	}
	if err != nil {
		return err
	}
	if asJSON != nil {
		return asJSON.Encode(ch)
	}
	_, err = fmt.Fprintf(stdout, "%s at %.12s: %d ahead of %s, %d behind, %d files changed\n",
		ch.Branch, ch.Head, ch.Ahead, ch.Base, ch.Behind, len(ch.Files))
	return err
}

// output writes the stored bytes of a command: stdout to stdout, stderr to stderr.
func output(ctx context.Context, api *client.Client, messageID, stream string, stdout, stderr io.Writer, asJSON *json.Encoder) error {
	m, err := api.GetMessage(ctx, messageID)
	if err != nil {
		return err
	}
	snap, err := api.ShellOutput(ctx, m.SessionID, m.ID)
	if err != nil {
		return err
	}
	if asJSON != nil {
		return asJSON.Encode(snap)
	}
	if stream != "stderr" {
		if _, err := io.WriteString(stdout, snap.Output.Stdout); err != nil {
			return err
		}
	}
	if stream != "stdout" {
		_, err = io.WriteString(stderr, snap.Output.Stderr)
	}
	return err
}

// seen is what the printer has shown of one message.
type seen struct {
	msg     shared.Message
	content int            // bytes of the content shown (agent text grows)
	end     shared.Offsets // where the output shown ends, in bytes produced
	etag    string
	ended   bool // a command's final line is shown
}

// printer shows a session's messages as they arrive.
type printer struct {
	api            *client.Client
	stdout, stderr io.Writer
	seen           map[string]*seen
	quiet          bool   // run: the person's own prompt is not echoed
	agent          string // run: the agent of the session
	last           *seen  // the newest command of the turn
	midline        bool   // agent text was shown without its line's end
	// json, when set, prints every message shown as one line of the API's message shape
	// (a changed message again, whole) instead of text; notes still go to stderr.
	json *json.Encoder
}

// say prints one line of chatter to stderr.
func (p *printer) say(format string, args ...any) {
	p.endLine()
	fmt.Fprintf(p.stderr, format+"\n", args...)
}

// endLine ends agent text that was left mid-line.
func (p *printer) endLine() {
	if p.midline {
		fmt.Fprintln(p.stderr)
		p.midline = false
	}
}

func (p *printer) run(ctx context.Context, agent, taskID, repoURL, base, cwd, text string) error {
	// Work that was started is finished or cancelled, not abandoned with the caller's ctx.
	bg := context.WithoutCancel(ctx)
	if taskID == "" {
		t, err := p.api.CreateTaskFrom(bg, oneLine(text), "conch run", repoURL, base)
		if err != nil {
			return err
		}
		taskID = t.ID
	}
	sess, err := p.api.StartSession(bg, taskID, agent, cwd)
	if err != nil {
		return err
	}
	if sess.State == shared.SessionFailed {
		return fmt.Errorf("the %s agent did not start: %s", agent, sess.Error)
	}
	p.say("session %s (conch tail %s)", sess.ID, sess.ID)
	conn, err := p.api.Dial(bg)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.Subscribe(bg, sess.ID); err != nil {
		return err
	}
	p.quiet, p.agent = true, agent
	if _, err := conn.Add(bg, shared.AddRequest{SessionID: sess.ID, Content: text}); err != nil {
		return err
	}
	running, cancelled := false, false
	for {
		select {
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				p.say("cancelling the turn (interrupt again to leave it running)")
				if err := p.api.Cancel(bg, sess.ID); err != nil {
					return err
				}
			}
			ctx = bg // a second interrupt ends the process through its default handler
		case env, ok := <-conn.Notifications():
			if !ok {
				return fmt.Errorf("the connection ended: %w", conn.Err())
			}
			if env.Action != shared.ActionSessionUpdated {
				p.notification(bg, env)
				continue
			}
			var s shared.Session
			if err := env.Decode(&s); err != nil {
				return err
			}
			if s.State == shared.SessionRunning {
				running = true
			} else if running || s.State.Ended() {
				p.endLine()
				return p.outcome(s)
			}
		}
	}
}

// outcome is the exit status of a finished turn: that of its last command, else whether
// the session is still usable.
func (p *printer) outcome(s shared.Session) error {
	if s.State == shared.SessionFailed {
		p.say("the session failed: %s", s.Error)
		return ExitStatus(1)
	}
	if p.last == nil && p.agent == "shell" {
		p.say("no command ran")
		return ExitStatus(127) // as a shell says of a command it could not run
	}
	if p.last == nil {
		return nil
	}
	se := shared.ShellOf(p.last.msg)
	switch {
	case se.Output.ExitCode != nil && *se.Output.ExitCode == 0:
		return nil
	case se.Output.ExitCode != nil:
		return ExitStatus(*se.Output.ExitCode)
	case se.Output.Signal != "" && unix.SignalNum(se.Output.Signal) != 0:
		return ExitStatus(128 + int(unix.SignalNum(se.Output.Signal))) // as a shell reports it
	case p.last.msg.Metadata.Status == shared.StatusCancelled:
		return ExitStatus(130)
	case p.last.msg.Metadata.Status == shared.StatusCompleted:
		return nil
	default:
		return ExitStatus(1)
	}
}

func (p *printer) tail(ctx context.Context, sessionID string) error {
	conn, err := p.api.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Subscribed first, so nothing falls between the history and the live updates; a
	// message in both is shown once (by id).
	if err := conn.Subscribe(ctx, sessionID); err != nil {
		return err
	}
	for req := (shared.ListRequest{SessionID: sessionID, Limit: new(shared.MaxPageLimit)}); ; {
		page, err := p.api.ListMessages(ctx, req)
		if err != nil {
			return err
		}
		for _, m := range page.Messages {
			p.show(ctx, m, false)
		}
		if !page.HasMore {
			break
		}
		req.After = page.Cursor
	}
	p.say("· following live; interrupt to stop")
	for {
		select {
		case <-ctx.Done():
			return nil
		case env, ok := <-conn.Notifications():
			if !ok {
				return fmt.Errorf("the connection ended: %w", conn.Err())
			}
			if env.Action == shared.ActionSessionUpdated {
				var s shared.Session
				if err := env.Decode(&s); err == nil && s.State != shared.SessionRunning {
					p.say("· session %s", s.State)
				}
				continue
			}
			p.notification(ctx, env)
		}
	}
}

func (p *printer) notification(ctx context.Context, env shared.Envelope) {
	var m shared.Message
	if err := env.Decode(&m); err != nil {
		p.say("conch: %v", err)
		return
	}
	p.show(ctx, m, true)
}

// show prints what is new about m. live says it arrived as it happened: a running
// command's output is followed then, while history shows only how to fetch it.
func (p *printer) show(ctx context.Context, m shared.Message, live bool) {
	s := p.seen[m.ID]
	first := s == nil
	if first {
		s = &seen{}
		p.seen[m.ID] = s
	}
	s.msg = m
	se := shared.ShellOf(m)
	if p.json != nil {
		if se != nil && first {
			p.last = s
		}
		if err := p.json.Encode(m); err != nil {
			p.say("conch: %v", err)
		}
		return
	}
	if p.quiet && m.AuthorType == shared.AuthorUser {
		return
	}
	switch {
	case se != nil:
		if first {
			p.say("$ %s", se.Command)
			p.last = s
		}
		if s.ended {
			return
		}
		terminal := m.Metadata.Status.IsTerminal()
		if se.Output.HasOutput && (live || !terminal) {
			p.follow(ctx, s)
		}
		if terminal {
			s.ended = true
			p.say("%s", ending(m.Metadata.Status, se.Output, live, m.ID))
		}
	case m.Type == shared.TypeMessage && m.AuthorType != shared.AuthorUser && live:
		// Agent text grows while it is written: show each new part as it comes.
		if len(m.Content) > s.content {
			fmt.Fprint(p.stderr, m.Content[s.content:])
			s.content = len(m.Content)
			p.midline = !strings.HasSuffix(m.Content, "\n")
		}
	case (m.Type == shared.TypeMessage || m.Type == shared.TypeError) && first:
		prefix := map[shared.MessageType]string{shared.TypeError: "error: "}[m.Type]
		if m.AuthorType == shared.AuthorUser {
			prefix = "› "
		}
		p.say("%s%s", prefix, strings.TrimRight(m.Content, "\n"))
	case m.Metadata != nil && m.Type == shared.TypeToolCall:
		if first || m.Metadata.Status.IsTerminal() && !s.ended {
			s.ended = m.Metadata.Status.IsTerminal()
			p.say("• %s (%s)", m.Content, m.Metadata.Status)
		}
	}
}

// follow prints what a command wrote since it was last shown, asking the server only for
// the bytes after those (offsets). The server keeps the last 256 KiB of each stream, so
// when more arrived than that between two looks, the cut is said.
func (p *printer) follow(ctx context.Context, s *seen) {
	snap, etag, unchanged, err := p.api.ShellOutputIfChanged(ctx, s.msg.SessionID, s.msg.ID, s.etag, &s.end)
	if err != nil {
		p.say("conch: reading the output: %v", err)
		return
	}
	if unchanged {
		return
	}
	s.etag = etag
	o := snap.Output
	if snap.Append == nil || !*snap.Append {
		// The whole kept tail: what was shown before it is no longer kept.
		if s.end != (shared.Offsets{}) {
			p.say("[… output not kept by the server …]")
		}
	}
	io.WriteString(p.stdout, o.Stdout)
	io.WriteString(p.stderr, o.Stderr)
	s.end = snap.End()
}

// ending is a command's last line.
func ending(status shared.ToolStatus, o shared.ShellOutputSummary, live bool, id string) string {
	var line string
	switch {
	case o.ExitCode != nil && *o.ExitCode == 0:
		line = "✓ exit 0"
	case o.ExitCode != nil:
		line = fmt.Sprintf("✗ exit %d", *o.ExitCode)
	case o.Signal != "":
		line = "✗ killed by " + o.Signal
	default:
		line = "· " + string(status)
	}
	if o.HasOutput && !live {
		line += fmt.Sprintf(" (output %d B: conch output %s)", o.StdoutBytes+o.StderrBytes, id)
	}
	return line
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
