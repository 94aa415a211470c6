package shared

import (
	"regexp"
	"slices"
	"time"
)

// Runner is a machine that runs sessions' agents for the server (`conch runner`), as
// GET /api/v1/runners lists it: what it announced when it connected, how many live
// sessions are placed on it, and whether it is connected to this server now.
type Runner struct {
	Name      string    `json:"name"`
	Labels    []string  `json:"labels"`
	Capacity  int       `json:"capacity"` // the most sessions it takes
	Sessions  int       `json:"sessions"` // live sessions placed on it
	Connected bool      `json:"connected"`
	LastSeen  time.Time `json:"last_seen"` // its last answer to the server's heartbeat
}

// RunnerList is GET /api/v1/runners' answer.
type RunnerList struct {
	Runners []Runner `json:"runners"`
}

// NewRunnerToken asks for a runner token (POST /api/v1/runners/tokens).
type NewRunnerToken struct {
	Name string `json:"name"`
}

// The bounds of what a runner announces.
const (
	MaxRunnerLabels   = 32
	MaxRunnerCapacity = 1024
)

var (
	runnerName  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	runnerLabel = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}(=[A-Za-z0-9._-]{1,63})?$`)
)

// CheckRunner is the rule for what a runner announces: a name of 1 to 64 letters, digits,
// '.', '_' or '-'; labels as CheckLabels; a capacity of 1 to MaxRunnerCapacity sessions.
func CheckRunner(name string, labels []string, capacity int) error {
	if !runnerName.MatchString(name) {
		return Errorf(CodeInvalid, "a runner's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if capacity < 1 || capacity > MaxRunnerCapacity {
		return Errorf(CodeInvalid, "a runner's capacity is 1 to %d sessions", MaxRunnerCapacity)
	}
	return CheckLabels(labels)
}

// CheckLabels is the rule for the labels a runner has and a profile requires: at most
// MaxRunnerLabels, each given once, each a name (`gpu`: lower-case letters, digits, '.',
// '_', '-') or a name=value (`os=linux`).
func CheckLabels(labels []string) error {
	if len(labels) > MaxRunnerLabels {
		return Errorf(CodeInvalid, "at most %d labels, not %d", MaxRunnerLabels, len(labels))
	}
	for i, l := range labels {
		if !runnerLabel.MatchString(l) {
			return Errorf(CodeInvalid, "label %q is not a name (lower-case letters, digits, '.', '_', '-'; at most 63) or name=value", CutLabel(l))
		}
		if slices.Contains(labels[:i], l) {
			return Errorf(CodeInvalid, "label %q is given twice", l)
		}
	}
	return nil
}
