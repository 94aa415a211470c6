package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"conch/shared"
)

// sizeLabel renders a byte count as the disclosure shows it: 812 B, 4.2 KB, 256 KB.
func sizeLabel(n int) string {
	const kb = 1024
	switch {
	case n < kb:
		return strconv.Itoa(n) + " B"
	case n < 10*kb:
		return oneDecimal(float64(n)/kb) + " KB"
	case n < kb*kb:
		return strconv.Itoa((n+kb/2)/kb) + " KB"
	case n < kb*kb*kb:
		return oneDecimal(float64(n)/(kb*kb)) + " MB"
	default:
		return oneDecimal(float64(n)/(kb*kb*kb)) + " GB"
	}
}

func oneDecimal(v float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}

// keptLabel says how much of what a command produced is kept, when not all of it is:
// "showing the last 256 KB of 48 MB".
func keptLabel(s shared.ShellOutputSummary) string {
	kept, total := s.StdoutBytes+s.StderrBytes, int(s.StdoutTotalBytes+s.StderrTotalBytes)
	if total <= kept {
		return ""
	}
	return "showing the last " + sizeLabel(kept) + " of " + sizeLabel(total)
}

// durationLabel renders how long a command ran: 0.0 s, 0.4 s, 12.3 s, 42 s, 3 min 5 s, 2 h 1 min.
func durationLabel(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < 10*time.Second-50*time.Millisecond:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Minute-50*time.Millisecond:
		return oneDecimal(d.Seconds()) + " s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
}

// elapsedLabel is a running command's time so far, in whole seconds: it changes once a
// second, not ten times.
func elapsedLabel(d time.Duration) string {
	if d < time.Minute {
		return strconv.Itoa(int(max(d, 0)/time.Second)) + " s"
	}
	return durationLabel(d)
}

// clockLabel is a start or finish time in the reader's time zone.
func clockLabel(t time.Time) string {
	return t.Local().Format("2 Jan 15:04:05")
}

// outputLabel is the disclosure's visible label, from the summary alone.
func outputLabel(s shared.ShellOutputSummary) string {
	l := "Output · " + sizeLabel(s.StdoutBytes+s.StderrBytes)
	if s.Truncated {
		l += " · truncated"
	}
	return l
}

// Outcome is what a command row's icon shows.
type Outcome string

const (
	OutcomeRunning   Outcome = "running"
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeNeutral   Outcome = "neutral" // finished, but the exit is unknown, or cancelled
)

// outcome decides a command's icon and status text from its projected status and exit
// code. The exit code is never inferred from the status (ACP-NOTES): a finished command
// without one is neutral.
func outcome(status shared.ToolStatus, exit *int, signal string) (Outcome, string) {
	switch {
	case status == shared.StatusPending:
		return OutcomeRunning, "Pending"
	case !status.IsTerminal():
		return OutcomeRunning, "Running"
	case status == shared.StatusCancelled:
		return OutcomeNeutral, "Command cancelled"
	case exit != nil && *exit == 0 && status == shared.StatusCompleted:
		return OutcomeSucceeded, "Command succeeded"
	case exit != nil:
		return OutcomeFailed, "Command failed"
	case signal != "":
		return OutcomeNeutral, "Command ended by " + signal
	case status == shared.StatusFailed:
		return OutcomeNeutral, "Command failed"
	default:
		return OutcomeNeutral, "Command finished"
	}
}

// rejected reports a tool call the person (or the profile) refused: it never ran.
func rejected(m shared.Message) bool { return m.Metadata != nil && m.Metadata.Rejected }

// exitLabel is the transcript's last line once the command has finished.
func exitLabel(exit *int) string {
	if exit == nil {
		return "Exit code unavailable"
	}
	return "Exit code " + strconv.Itoa(*exit)
}
