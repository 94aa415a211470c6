package shared

import (
	"slices"
	"strings"
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

// word reports whether s is 1 to most bytes of letters (lower-case ones only when lower),
// digits, '.', '_' and '-', starting with a letter or digit. (No regexp: app.wasm has none.)
func word(s string, most int, lower bool) bool {
	if s == "" || len(s) > most || strings.ContainsRune("._-", rune(s[0])) {
		return false
	}
	for _, c := range []byte(s) {
		letter := 'a' <= c && c <= 'z' || !lower && 'A' <= c && c <= 'Z'
		if !letter && !('0' <= c && c <= '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func runnerLabel(l string) bool {
	name, value, hasValue := strings.Cut(l, "=")
	return word(name, 63, true) && (!hasValue || word(value, 63, false))
}

// CheckRunner is the rule for what a runner announces: a name of 1 to 64 letters, digits,
// '.', '_' or '-'; labels as CheckLabels; a capacity of 1 to MaxRunnerCapacity sessions.
func CheckRunner(name string, labels []string, capacity int) error {
	if !word(name, 64, false) {
		return Errorf(CodeInvalid, "a runner's name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	if capacity < 1 || capacity > MaxRunnerCapacity {
		return Errorf(CodeInvalid, "a runner's capacity is 1 to %d sessions", MaxRunnerCapacity)
	}
	return CheckLabels(labels)
}

// CheckLabels is the rule for the labels a runner has and a profile requires: at most
// MaxRunnerLabels, each given once, each a name (`gpu`: 1 to 63 lower-case letters,
// digits, '.', '_', '-', starting with a letter or digit) or a name=value (`os=linux`; the
// value as a name, in any letter case).
func CheckLabels(labels []string) error {
	if len(labels) > MaxRunnerLabels {
		return Errorf(CodeInvalid, "at most %d labels, not %d", MaxRunnerLabels, len(labels))
	}
	for i, l := range labels {
		if !runnerLabel(l) {
			return Errorf(CodeInvalid, "label %q is not a name (lower-case letters, digits, '.', '_', '-'; at most 63) or name=value", CutLabel(l))
		}
		if slices.Contains(labels[:i], l) {
			return Errorf(CodeInvalid, "label %q is given twice", l)
		}
	}
	return nil
}
