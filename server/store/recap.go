package store

import (
	"fmt"
	"slices"
	"strings"

	"conch/shared"
)

// Bounds of a recap: each prompt or reply is cut to RecapTextBytes, and the oldest turns
// are left out past RecapBytes (a prompt a person still reads).
const (
	RecapTextBytes = 2000
	RecapBytes     = 16 << 10
	RecapLookBack  = 200 // the latest messages a recap draws from, for its caller to read
)

// Recap tells an agent with no memory of a conversation what was said in it: head, then
// each person's prompt ("Me") and agent's reply ("You") of msgs (in order, oldest first),
// cut to RecapTextBytes, the oldest left out past RecapBytes; cut says older messages were
// not read. A fork's first prompt is one (task.Fork), and so is what an agent that starts
// afresh on another runner is told of the session it takes over (acp).
func Recap(head string, msgs []shared.Message, cut bool) string {
	var turns []string
	size := len(head)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Type != shared.TypeMessage || m.AuthorType != shared.AuthorUser && m.AuthorType != shared.AuthorAgent {
			continue
		}
		who := map[bool]string{true: "Me", false: "You"}[m.AuthorType == shared.AuthorUser]
		text := strings.TrimSpace(m.Content)
		if len(text) > RecapTextBytes {
			text = CutText(text, RecapTextBytes) + " […]"
		}
		turn := fmt.Sprintf("%s: %s\n\n", who, text)
		if size+len(turn) > RecapBytes {
			cut = true
			break
		}
		size += len(turn)
		turns = append(turns, turn)
	}
	slices.Reverse(turns)
	b := strings.Builder{}
	b.WriteString(head)
	if cut {
		b.WriteString("(Earlier messages are left out.)\n\n")
	}
	for _, t := range turns {
		b.WriteString(t)
	}
	return b.String()
}
