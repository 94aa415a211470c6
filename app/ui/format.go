package ui

import (
	"fmt"
	"strconv"
	"strings"

	"conch/shared"
)

// sizeLabel renders a byte count as the disclosure shows it: 812 B, 4.2 KB, 256 KB.
func sizeLabel(n int) string {
	const kb = 1024
	switch {
	case n < kb:
		return strconv.Itoa(n) + " B"
	case n < 10*kb:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/kb), ".0") + " KB"
	case n < kb*kb:
		return strconv.Itoa((n+kb/2)/kb) + " KB"
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/(kb*kb)), ".0") + " MB"
	}
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

// exitLabel is the transcript's last line once the command has finished.
func exitLabel(exit *int) string {
	if exit == nil {
		return "Exit code unavailable"
	}
	return "Exit code " + strconv.Itoa(*exit)
}
