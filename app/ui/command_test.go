package ui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

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

func snapshot(status shared.ToolStatus, o shared.ShellOutput) shared.ShellOutputSnapshot {
	return shared.ShellOutputSnapshot{MessageID: "m1", Status: status, Output: o}
}

func TestCommandRowCollapsed(t *testing.T) {
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
			want: []string{`aria-label="Show command output"`, `aria-expanded="false"`, "Output · 812 B",
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
			want:   []string{"Output · 256 KB · truncated", "icon-succeeded", "Command succeeded"},
		},
		{
			name:    "no output: no disclosure at all",
			status:  shared.StatusCompleted,
			sum:     shared.ShellOutputSummary{ExitCode: intp(0)},
			want:    []string{"Command succeeded"},
			notWant: []string{"<button", "Output ·"},
		},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			html := render(t, row(shellMsg(tt.status, tt.sum), nil))
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q in\n%s", w, html)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(html, w) {
					t.Errorf("unexpected %q in\n%s", w, html)
				}
			}
		})
	}
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
			Aria("label", "Show command output").Aria("expanded", "false").Aria("controls", "output-m1").
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
			want:    []string{`aria-label="Hide command output"`, "aria-expanded", "Loading command output…"},
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
			want: []string{`<pre class="stdout">out line`, `class="stderr"`, "err line",
				"Output truncated", "Exit code 7"},
			notWant: []string{"No command output"},
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
			for _, w := range tt.want {
				if !strings.Contains(html, w) {
					t.Errorf("missing %q in\n%s", w, html)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(html, w) {
					t.Errorf("unexpected %q in\n%s", w, html)
				}
			}
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

func TestSizeLabel(t *testing.T) {
	for n, want := range map[int]string{
		0: "0 B", 812: "812 B", 1023: "1023 B", 1024: "1 KB", 4300: "4.2 KB", 10 * 1024: "10 KB",
		262144: "256 KB", 2 * 262144: "512 KB", 1 << 20: "1 MB",
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
	html := render(t, row(msg, func(m *poll.Machine) {
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
