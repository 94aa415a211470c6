package acp

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
)

// A console's bash marks its prompts and commands with OSC 133, the shell integration
// terminals share (FinalTerm's: A a prompt starts, B the input starts, C the command's
// output starts, D;N it ended with exit code N). Conch's C also carries the command line,
// base64-encoded, since the typed line on screen is the line editor's, not the command.
// The stream is the sandbox's: anything can print a mark, so they are read with bounds
// and taken for what they are, the shell's word about commands typed into it.

// oscLimit is the longest OSC sequence read as a mark; a longer one is passed on unread.
const oscLimit = 16 << 10

// consolePrompt is the shell integration, as bash's environment: PS0 is printed once a
// command line is read, before it runs; PROMPT_COMMAND before each prompt.
var consolePrompt = []string{
	`PS1=\[\e]133;A\a\]\w \$ \[\e]133;B\a\]`,
	`PS0=\e]133;C;$(fc -ln -0 | base64 -w0)\a`,
	`PROMPT_COMMAND=printf '\e]133;D;%s\a' "$?"`,
	"HISTCONTROL=", "HISTFILE=", // every line in the history (fc reads it), none written
}

// markKind is what a mark says.
type markKind int

const (
	markNone    markKind = iota
	markPrompt           // A or B: the prompt, or the input after it, starts
	markCommand          // C: a command line starts running
	markEnd              // D: the command ended
)

// mark is one mark read from the stream.
type mark struct {
	kind markKind
	line string // markCommand: the command line
	exit *int   // markEnd: its exit code, when the mark said
}

// markReader finds the marks in a console's output, across reads. feed hands each run of
// bytes that is not a mark to text and each mark to found, in order. An OSC sequence is
// held until it ends (at most oscLimit bytes); one that is not a mark is handed on whole.
type markReader struct {
	state readState
	osc   []byte // the OSC payload read so far (inOSC, oscESC)
}

type readState int

const (
	inText   readState = iota
	afterESC           // an ESC ended the last read: held back until we know what follows
	inOSC
	oscESC  // an ESC inside an OSC: ESC \ ends it
	longOSC // an OSC past oscLimit, handed on as text until it ends
)

func (r *markReader) feed(p []byte, text func([]byte), found func(mark)) {
	start := 0 // of the text run not yet handed on
	if len(p) == 0 {
		return
	}
	if r.state == afterESC {
		r.state = inText
		if p[0] == ']' {
			r.state, r.osc = inOSC, r.osc[:0]
			p = p[1:]
		} else {
			text([]byte{0x1b})
		}
	}
	for i := 0; i < len(p); i++ {
		if r.state == inText { // text runs to the next ESC, found at memchr's pace (a flood is text)
			j := bytes.IndexByte(p[i:], 0x1b)
			if j < 0 {
				break
			}
			i += j
		}
		b := p[i]
		switch r.state {
		case inText:
			if i+1 == len(p) {
				text(p[start:i])
				r.state = afterESC
				return
			}
			if p[i+1] == ']' {
				text(p[start:i])
				r.state, r.osc = inOSC, r.osc[:0]
				i++
				start = i + 1
			}
		case inOSC, oscESC:
			if b == 0x07 || r.state == oscESC && b == '\\' {
				payload := r.osc
				if r.state == oscESC {
					payload = payload[:len(payload)-1]
				}
				if m := parseMark(payload); m.kind != markNone {
					found(m)
				} else {
					text(append(append([]byte("\x1b]"), r.osc...), b))
				}
				r.state, start = inText, i+1
				continue
			}
			if b == 0x18 || b == 0x1a { // CAN and SUB abort a sequence
				text(append([]byte("\x1b]"), r.osc...))
				r.state, start = inText, i
				continue
			}
			if len(r.osc) == oscLimit { // too long to be a mark: handed on as it comes
				text(append([]byte("\x1b]"), r.osc...))
				r.state, start = longOSC, i
				continue
			}
			r.osc = append(r.osc, b)
			r.state = inOSC
			if b == 0x1b {
				r.state = oscESC
			}
		case longOSC:
			if b == 0x07 || b == 0x18 || b == 0x1a || b == '\\' && i > 0 && p[i-1] == 0x1b {
				r.state = inText
			}
		}
	}
	if (r.state == inText || r.state == longOSC) && start < len(p) {
		text(p[start:])
	}
}

// parseMark reads an OSC payload as a mark: 133;C;BASE64 or 133;D;N. Anything else
// (another OSC, a malformed mark) is markNone.
func parseMark(payload []byte) mark {
	rest, ok := bytes.CutPrefix(payload, []byte("133;"))
	if !ok || len(rest) == 0 {
		return mark{}
	}
	kind, arg, _ := bytes.Cut(rest, []byte(";"))
	switch string(kind) {
	case "A", "B":
		return mark{kind: markPrompt}
	case "C":
		line, err := base64.StdEncoding.DecodeString(string(arg))
		if err != nil {
			return mark{}
		}
		// fc -ln prints a tab and a space before the line, and a newline after it.
		return mark{kind: markCommand, line: strings.TrimSpace(string(line))}
	case "D":
		m := mark{kind: markEnd}
		if code, err := strconv.Atoi(string(arg)); err == nil && code >= 0 && code <= 255 {
			m.exit = &code
		}
		return m
	}
	return mark{}
}
