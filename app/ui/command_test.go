package ui

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
	"golang.org/x/net/html"

	"conch/shared"
	"conch/shared/poll"
)

func intp(n int) *int { return &n }

func shellMsg(status shared.ToolStatus, sum shared.ShellOutputSummary) shared.Message {
	return shared.Message{
		ID: "m1", SessionID: "s1", Type: shared.TypeToolExecute, AuthorType: shared.AuthorAgent,
		Content: "fallback",
		Metadata: &shared.Metadata{Status: status, Normalized: &shared.Normalized{
			Kind: shared.NormalizedShellExec,
			ShellExec: &shared.ShellExec{
				Command: "for i in 1 2 3; do echo $i; done && go test ./... -run 'TestVeryLongName' -count=1",
				WorkDir: "/repo", Output: sum,
			},
		}},
	}
}

// row returns a command row whose disclosure machine has been driven by events, the
// way the browser drives it (the host runs no OnMount).
func row(msg shared.Message, drive func(m *poll.Machine)) *CommandRow {
	c := &CommandRow{SessionID: "s1", Msg: msg}
	if drive != nil {
		drive(c.machine())
	}
	return c
}

func render(t *testing.T, c app.Composer) string {
	t.Helper()
	e := app.NewTestEngine()
	if err := e.Load(c); err != nil {
		t.Fatal(err)
	}
	e.ConsumeAll()
	return app.HTMLString(c)
}

// compact removes the layout the host encoder gives nested elements (a new line and
// indentation before each), so that wants can name elements with their text.
// It also writes each start tag's attributes in name order: go-app keeps an element's
// attributes in a map, so the order it writes them in changes from run to run, and a want
// naming two attributes of one element must name them in that order.
func compact(s string) string {
	z := html.NewTokenizer(strings.NewReader(regexp.MustCompile(`\n\s*`).ReplaceAllString(s, "")))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.StartTagToken, html.SelfClosingTagToken:
			raw := string(z.Raw())
			name, rest, _ := strings.Cut(strings.TrimSuffix(strings.TrimSuffix(raw, ">"), "/"), " ")
			attrs := attrPattern.FindAllString(rest, -1)
			slices.Sort(attrs)
			b.WriteString(strings.Join(append([]string{name}, attrs...), " "))
			if strings.HasSuffix(raw, "/>") {
				b.WriteString("/")
			}
			b.WriteString(">")
		default:
			b.Write(z.Raw())
		}
	}
}

// attrPattern matches one attribute of a start tag as go-app writes it: a name, and a
// quoted value if it has one.
var attrPattern = regexp.MustCompile(`[^\s="/>]+(="[^"]*")?`)

// checkHTML fails t for every string of want missing from html and of notWant in it.
func checkHTML(t *testing.T, html string, want, notWant []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(html, w) {
			t.Errorf("missing %q in\n%s", w, html)
		}
	}
	for _, w := range notWant {
		if strings.Contains(html, w) {
			t.Errorf("unexpected %q in\n%s", w, html)
		}
	}
}

func snapshot(status shared.ToolStatus, o shared.ShellOutput) shared.ShellOutputSnapshot {
	return shared.ShellOutputSnapshot{MessageID: "m1", Status: status, Output: o}
}

// A collapsed row shows the command, its status and the facts of its summary: how long
// it ran, how much was kept of how much, the signal, the times on hover or focus.
func TestCommandRowCollapsed(t *testing.T) {
	start := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	end := start.Add(12300 * time.Millisecond)
	defer func(old func() time.Time) { now = old }(now)
	now = func() time.Time { return start.Add(4500 * time.Millisecond) }
	sig := func(s string) shared.ShellOutputSummary {
		return shared.ShellOutputSummary{Signal: s, StartedAt: &start}
	}
	tests := []struct {
		name    string
		status  shared.ToolStatus
		sum     shared.ShellOutputSummary
		want    []string
		notWant []string
	}{
		{
			name:   "finished with output: label from the summary, collapsed",
			status: shared.StatusFailed,
			sum:    shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 800, StderrBytes: 12, ExitCode: intp(7)},
			want: []string{`aria-label="Show command output: Output · 812 B"`, `aria-expanded="false"`, "Output · 812 B",
				"icon-failed", "Command failed", "/repo", "go test ./... -run &#39;TestVeryLongName&#39; -count=1"},
			notWant: []string{"transcript", "Exit code"},
		},
		{
			name:    "running with output is collapsed too",
			status:  shared.StatusRunning,
			sum:     shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 4300},
			want:    []string{"Show command output", "Output · 4.2 KB", "icon-running", "Running"},
			notWant: []string{"transcript"},
		},
		{
			name:   "truncated at the bound",
			status: shared.StatusCompleted,
			sum:    shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 262144, Truncated: true, ExitCode: intp(0)},
			want:   []string{`aria-label="Show command output: Output · 256 KB · truncated"`, "icon-succeeded", "Command succeeded"},
		},
		{
			name:    "no output: no disclosure at all",
			status:  shared.StatusCompleted,
			sum:     shared.ShellOutputSummary{ExitCode: intp(0)},
			want:    []string{"Command succeeded"},
			notWant: []string{"<button", "Output ·", "sent no output"},
		},
		{
			name:    "the agent's own command, nothing reported but its end: says so",
			status:  shared.StatusCompleted,
			sum:     shared.ShellOutputSummary{},
			want:    []string{"Command finished", `<p class="cmd-note">The agent ran this itself and sent no output.</p>`},
			notWant: []string{"<button", "Output ·"},
		},
		{"failed so, too", shared.StatusFailed, shared.ShellOutputSummary{}, []string{"Command failed", "sent no output"}, nil},
		{"still running: nothing said yet", shared.StatusRunning, shared.ShellOutputSummary{}, nil, []string{"sent no output"}},
		{"cancelled: nothing said", shared.StatusCancelled, shared.ShellOutputSummary{}, nil, []string{"sent no output"}},
		{"a signal is news of it", shared.StatusFailed, shared.ShellOutputSummary{Signal: "SIGKILL"}, nil, []string{"sent no output"}},
		{"with output", shared.StatusCompleted, shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 1}, nil, []string{"sent no output"}},
		{
			name:    "killed by a signal: neutral",
			status:  shared.StatusFailed,
			sum:     shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 1, Signal: "SIGKILL"},
			want:    []string{"icon-neutral", "Command ended by SIGKILL"},
			notWant: []string{"icon-failed"},
		},
		{
			name:   "cancelled: neutral",
			status: shared.StatusCancelled,
			sum:    shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 1},
			want:   []string{"icon-neutral", "Command cancelled"},
		},
		{"finished", shared.StatusCompleted, shared.ShellOutputSummary{ExitCode: intp(0), StartedAt: &start, FinishedAt: &end},
			[]string{`class="timing"`, `tabindex="0"`, ">ran 12.3 s<", "Started " + clockLabel(start) + " · finished " + clockLabel(end)},
			[]string{"showing the last", "ended by"}},
		{"running: the time so far", shared.StatusRunning, shared.ShellOutputSummary{StartedAt: &start},
			[]string{">for 4 s<"}, []string{"ran "}},
		{"no times: nothing said", shared.StatusCompleted, shared.ShellOutputSummary{ExitCode: intp(0)},
			nil, []string{"timing"}},
		{"cancelled before the process ended", shared.StatusCancelled, shared.ShellOutputSummary{StartedAt: &start},
			[]string{">started " + clockLabel(start) + "<"}, []string{`tabindex`}},
		{"more produced than kept", shared.StatusCompleted, shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 200 << 10, StderrBytes: 56 << 10,
			StdoutTotalBytes: 47 << 20, StderrTotalBytes: 1 << 20, Truncated: true},
			[]string{">showing the last 256 KB of 48 MB<"}, nil},
		{"all kept", shared.StatusCompleted, shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 10, StdoutTotalBytes: 10},
			nil, []string{"showing the last"}},
		{"killed while cancelled", shared.StatusCancelled, sig("SIGKILL"), []string{"Command cancelled", ">ended by SIGKILL<"}, nil},
		{"the status already names the signal", shared.StatusCompleted, sig("SIGTERM"), []string{"Command ended by SIGTERM"}, []string{">ended by SIGTERM<"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkHTML(t, compact(render(t, row(shellMsg(tt.status, tt.sum), nil))), tt.want, tt.notWant)
		})
	}
}

// A command the person rejected never ran: the row says so and has no output to open,
// whatever the agent reported of it.
func TestCommandRowRejected(t *testing.T) {
	m := shellMsg(shared.StatusCancelled, shared.ShellOutputSummary{})
	m.Metadata.Rejected = true
	checkHTML(t, compact(render(t, row(m, nil))), []string{"icon-neutral", "Command rejected"},
		[]string{"Command cancelled", "<button", "Output ·"})
	tool := shared.Message{ID: "t1", Type: shared.TypeToolCall, Content: "Edit a.go",
		Metadata: &shared.Metadata{Status: shared.StatusCancelled, Rejected: true}}
	checkHTML(t, compact(app.HTMLString(toolRow(tool, ""))), []string{"Edit a.go", "Rejected"}, []string{"Cancelled"})
}

func TestCommandRowButtonMatch(t *testing.T) {
	c := row(shellMsg(shared.StatusCompleted, shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 3, ExitCode: intp(0)}), nil)
	e := app.NewTestEngine()
	if err := e.Load(c); err != nil {
		t.Fatal(err)
	}
	// Row > disclosure (third child) > button (first child).
	err := app.TestMatch(c, app.TestUIDescriptor{
		Path: app.TestPath(0, 2, 0),
		Expected: app.Button().Class("disclosure-toggle").Type("button").
			Aria("label", "Show command output: Output · 3 B").Aria("expanded", "false").Aria("controls", "output-m1").
			OnClick(c.toggle),
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestCommandRowOpen(t *testing.T) {
	running := shared.StatusRunning
	tests := []struct {
		name    string
		status  shared.ToolStatus
		drive   func(m *poll.Machine)
		want    []string
		notWant []string
	}{
		{
			name:   "loading",
			status: running,
			drive:  func(m *poll.Machine) { m.Open() },
			// ("true" is encoded as a bare attribute on the host; the browser sets the string.)
			want:    []string{`aria-label="Hide command output: Output · 9 B"`, "aria-expanded", "Loading command output…"},
			notWant: []string{"Exit code"},
		},
		{
			name:   "running, nothing yet",
			status: running,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(running, shared.ShellOutput{}), "")
			},
			want:    []string{"No command output yet."},
			notWant: []string{"Loading", "Exit code"},
		},
		{
			name:   "finished, nothing at all",
			status: shared.StatusCompleted,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{ExitCode: intp(0)}), "")
			},
			want: []string{"No command output.", "Exit code 0"},
		},
		{
			name:   "stdout, stderr in its own style, truncated, exit code",
			status: shared.StatusFailed,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusFailed, shared.ShellOutput{Stdout: "out line\n", Stderr: "err line\n", Truncated: true, ExitCode: intp(7)}), "")
			},
			want: []string{`class="term stdout"`, `aria-label="Standard output"`, "out line", `class="term stderr"`, "err line",
				"Output truncated", "Exit code 7"},
			notWant: []string{"No command output"},
		},
		{
			name:   "a tail kept of a longer stdout: its line numbers count the tail's lines, and say so",
			status: shared.StatusCompleted,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{Stdout: "2999823\n", StdoutTotalBytes: 3 << 20, Stderr: "whole\n",
					StderrTotalBytes: 6, Truncated: true, ExitCode: intp(0)}), "")
			},
			want: []string{`<span class="stream-lines">1 line of the kept tail</span>`, `<span class="stream-lines">1 line</span>`,
				"Output truncated: the first 3 MB of stdout were not kept, so line numbers count the lines of the kept tail"},
		},
		{
			name:   "stopped by the server's storage limit",
			status: shared.StatusCompleted,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{Stdout: "kept\n", Truncated: true, StorageFull: true, ExitCode: intp(0)}), "")
			},
			want: []string{"kept", "Output truncated: the server stopped storing it here, its storage limit is reached", "Exit code 0"},
		},
		{
			name:   "finished without an exit code",
			status: shared.StatusCancelled,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusCancelled, shared.ShellOutput{Stdout: "1\n"}), "")
			},
			want: []string{"Exit code unavailable"},
		},
		{
			name:   "failure keeps the last good snapshot and offers Retry",
			status: running,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(running, shared.ShellOutput{Stdout: "partial"}), "")
				m.Timer(2)
				m.Failed(3)
			},
			want: []string{"partial", "Command output unavailable.", ">Retry</button>"},
		},
		{
			name:   "closed again: the transcript is gone",
			status: shared.StatusCompleted,
			drive: func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{Stdout: "gone"}), "")
				m.Close()
			},
			want:    []string{"Show command output"},
			notWant: []string{"gone", "transcript"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 9}
			html := render(t, row(shellMsg(tt.status, sum), tt.drive))
			checkHTML(t, html, tt.want, tt.notWant)
		})
	}
}

// Terminal text is drawn as a terminal shows it, with classes for styles, and output that
// looks like markup stays text.
func TestCommandRowTerminalText(t *testing.T) {
	tests := []struct {
		name, stdout string
		want         []string
		notWant      []string
	}{
		{"colours as classes", "\x1b[31mred\x1b[0m plain\n",
			[]string{`"><span class="t-f1">red</span>plain</span>`}, []string{"\x1b", "[31m", "style="}},
		{"attributes and 256 colours", "\x1b[1;4;38;5;208mx\n",
			[]string{`<span class="t-f208 t-bold t-ul">x</span>`}, nil},
		{"inverse of the defaults", "\x1b[7mx\n", []string{`<span class="t-fi t-bi">x</span>`}, nil},
		{"inverse of colours", "\x1b[7;31;42mx\n", []string{`<span class="t-f2 t-b1">x</span>`}, nil},
		{"a progress bar shows its last state", "progress 33%\rprogress 66%\rprogress 99%\n",
			[]string{`">progress 99%</span>`}, []string{"33%", "66%"}},
		{"markup is text", "<script>alert(1)</script><img src=x onerror=alert(1)>\n",
			[]string{"&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"}, []string{"<script>", "<img"}},
		{"lines counted and numbered", "a\nb\n\nc", []string{"4 lines", `data-n="1"`, `data-n="4"`}, []string{`data-n="5"`, "before these"}},
		{"only the last lines drawn", strings.Repeat("line\n", 1000), []string{"1000 lines", ">Show 800 lines before these</button>", `data-n="801"`, `data-n="1000"`},
			[]string{`data-n="800"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html := render(t, row(shellMsg(shared.StatusCompleted, shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 9}), func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{Stdout: tt.stdout, ExitCode: intp(0)}), "")
			}))
			html = compact(html)
			checkHTML(t, html, tt.want, tt.notWant)
		})
	}
}

// Search marks every match in both streams, ignoring case, and counts them; the current
// match has a class of its own, also across a change of style inside it.
func TestCommandRowSearch(t *testing.T) {
	tests := []struct {
		name, query string
		at          int
		want        []string
		notWant     []string
	}{
		{"count and current", "err", 1, []string{">2 of 5<", `<mark class="hit">err</mark>or one`, `<mark class="hit current">ERR</mark>OR two`,
			`std<mark class="hit">err</mark><mark class="hit">err</mark>or`}, nil},
		{"across styles", "error", 0, []string{`<mark class="hit"><span class="t-f1">er</span></mark><mark class="hit">ror</mark>`}, nil},
		{"markup stays text", "<b>", 0, []string{`<mark class="hit current">&lt;b&gt;</mark>`}, []string{"><b>"}},
		{"nothing found", "absent", 0, []string{">No matches<", "disabled"}, []string{"<mark"}},
		{"no search", "", 0, nil, []string{"<mark", "No matches"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := row(shellMsg(shared.StatusCompleted, shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 9}), func(m *poll.Machine) {
				m.Open()
				m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{ExitCode: intp(0),
					Stdout: "error one\nfine <b>\nERROR two\n", Stderr: "stderr error\n\x1b[31mer\x1b[0mror\n"}), "")
			})
			c.tools.query, c.tools.at = tt.query, tt.at
			checkHTML(t, compact(render(t, c)), tt.want, tt.notWant)
		})
	}
}

// A server that wrongly sent bodies in metadata must still not get them on screen: the
// wire type has no body field, and the transcript comes from the snapshot only.
func TestCommandRowNeverReadsBodyFromMetadata(t *testing.T) {
	leaky := `{"id":"m1","session_id":"s1","task_id":"t1","author_type":"agent","type":"tool_execute","content":"x",
	 "metadata":{"status":"completed","normalized":{"kind":"shell_exec","shell_exec":{"command":"cat secret",
	 "output":{"has_output":true,"stdout_bytes":6,"stderr_bytes":0,"truncated":false,"exit_code":0,
	 "stdout":"LEAKED-BODY","stderr":"LEAKED-ERR"}}}},"created_at":"2026-12-02T00:00:00Z","updated_at":"2026-12-02T00:00:00Z"}`
	var msg shared.Message
	if err := json.Unmarshal([]byte(leaky), &msg); err != nil {
		t.Fatal(err)
	}
	for _, drive := range []func(*poll.Machine){
		nil,
		func(m *poll.Machine) { m.Open() },
		func(m *poll.Machine) {
			m.Open()
			m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{Stdout: "from-snapshot", ExitCode: intp(0)}), "")
		},
	} {
		html := render(t, row(msg, drive))
		if strings.Contains(html, "LEAKED") {
			t.Fatalf("a body from metadata reached the page:\n%s", html)
		}
	}
}

func TestDurationLabel(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0.0 s", 400 * time.Millisecond: "0.4 s", 12300 * time.Millisecond: "12.3 s", 9960 * time.Millisecond: "10 s",
		42 * time.Second: "42 s", 59960 * time.Millisecond: "1 min 0 s", 185 * time.Second: "3 min 5 s", 2*time.Hour + 61*time.Second: "2 h 1 min",
	} {
		if got := durationLabel(d); got != want {
			t.Errorf("durationLabel(%v) = %q, want %q", d, got, want)
		}
	}
	for d, want := range map[time.Duration]string{4500 * time.Millisecond: "4 s", 59 * time.Second: "59 s", 61 * time.Second: "1 min 1 s"} {
		if got := elapsedLabel(d); got != want {
			t.Errorf("elapsedLabel(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int]string{
		0: "0 B", 812: "812 B", 1023: "1023 B", 1024: "1 KB", 4300: "4.2 KB", 10 * 1024: "10 KB",
		262144: "256 KB", 2 * 262144: "512 KB", 1 << 20: "1 MB", 48 << 20: "48 MB", 3 << 29: "1.5 GB",
	} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestOutcome(t *testing.T) {
	tests := []struct {
		status shared.ToolStatus
		exit   *int
		signal string
		want   Outcome
		text   string
	}{
		{shared.StatusPending, nil, "", OutcomeRunning, "Pending"},
		{shared.StatusRunning, nil, "", OutcomeRunning, "Running"},
		{shared.StatusCompleted, intp(0), "", OutcomeSucceeded, "Command succeeded"},
		{shared.StatusFailed, intp(7), "", OutcomeFailed, "Command failed"},
		{shared.StatusFailed, intp(0), "", OutcomeFailed, "Command failed"},
		{shared.StatusCompleted, nil, "", OutcomeNeutral, "Command finished"},
		{shared.StatusFailed, nil, "", OutcomeNeutral, "Command failed"},
		{shared.StatusFailed, nil, "SIGTERM", OutcomeNeutral, "Command ended by SIGTERM"},
		{shared.StatusCancelled, intp(0), "", OutcomeNeutral, "Command cancelled"},
	}
	for _, tt := range tests {
		o, text := outcome(tt.status, tt.exit, tt.signal)
		if o != tt.want || text != tt.text {
			t.Errorf("outcome(%s, %v, %q) = %s %q, want %s %q", tt.status, tt.exit, tt.signal, o, text, tt.want, tt.text)
		}
	}
}

// Bidirectional controls and other invisible format characters in a command, its working
// directory and its output show as markers: the command cannot display as another one.
func TestCommandRowShowsFormatCharacters(t *testing.T) {
	msg := shellMsg(shared.StatusCompleted, shared.ShellOutputSummary{HasOutput: true, StdoutBytes: 9})
	msg.Metadata.Normalized.ShellExec.Command = "cp x \u202e#gnp.tahc"
	msg.Metadata.Normalized.ShellExec.WorkDir = "/repo\u2066"
	html := render(t, row(msg.Visible(), func(m *poll.Machine) { // as the page's timeline keeps it
		m.Open()
		m.Loaded(1, snapshot(shared.StatusCompleted, shared.ShellOutput{Stdout: "ok\u200b\n", Stderr: "\u2067err", ExitCode: intp(0)}), "")
	}))
	for _, want := range []string{"cp x ⟨U+202E⟩#gnp.tahc", "/repo⟨U+2066⟩", "ok⟨U+200B⟩", "⟨U+2067⟩err"} {
		if !strings.Contains(html, want) {
			t.Errorf("no %q in\n%s", want, html)
		}
	}
	for _, raw := range []string{"\u202e", "\u2066", "\u2067", "\u200b"} {
		if strings.Contains(html, raw) {
			t.Errorf("the row holds %q unmarked", raw)
		}
	}
}

// A command run in the session's own directory names none; one below it names the path
// from there; one elsewhere names the whole path.
func TestWorkDirLabel(t *testing.T) {
	for _, c := range []struct{ cwd, dir, want string }{
		{"/home/me/sessions/s1", "/home/me/sessions/s1", ""},
		{"/home/me/sessions/s1/", "/home/me/sessions/s1", ""},
		{"/home/me/sessions/s1", "/home/me/sessions/s1/web/app", "web/app"},
		{"/home/me/sessions/s1", "/tmp", "/tmp"},
		{"/home/me/sessions/s1", "/home/me/sessions/s10", "/home/me/sessions/s10"},
		{"", "/repo", "/repo"},
	} {
		if got := workDirLabel(c.cwd, c.dir); got != c.want {
			t.Errorf("workDirLabel(%q, %q) = %q, want %q", c.cwd, c.dir, got, c.want)
		}
	}
}
