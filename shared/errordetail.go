package shared

import (
	"strings"
	"time"
	"unicode/utf8"
)

// An agent's error can be long: a stack, a stderr tail, the agent's own prompt. Messages
// of type error carry only its headline (its first line, bounded); the whole text is
// fetched on demand (GET .../error-detail), like a command's output.

// HeadlineLimit bounds a headline: about two lines of a phone screen.
const HeadlineLimit = 160

// Headline returns the first non-blank line of s, cut to HeadlineLimit bytes (on a
// character boundary, ending "…"), and whether s holds more than that line.
func Headline(s string) (line string, more bool) {
	t := strings.TrimSpace(s)
	line, rest, _ := strings.Cut(t, "\n")
	line = strings.TrimSpace(line)
	more = strings.TrimSpace(rest) != ""
	if len(line) > HeadlineLimit {
		cut := HeadlineLimit
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line, more = strings.TrimSpace(line[:cut])+"…", true
	}
	return line, more
}

// ErrorDetail is the answer of GET .../error-detail: the whole stored text of an error
// message.
type ErrorDetail struct {
	MessageID string    `json:"message_id"`
	UpdatedAt time.Time `json:"updated_at"`
	Text      string    `json:"text"`
}

// Visible returns d as a page shows it: its text marked (Visible).
func (d ErrorDetail) Visible() ErrorDetail {
	d.Text = Visible(d.Text)
	return d
}
