package ui

import (
	"sort"

	"conch/shared"
)

// timeline is a session's messages in (created_at, id) order, one entry per id. Lists,
// notifications and the answer to a prompt all merge into it, so a message seen twice
// (a reconnect's re-list, a notification racing the POST answer) is never doubled.
type timeline struct {
	msgs []shared.Message
	at   map[string]int // id -> index in msgs
}

func before(a, b shared.Message) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// merge adds or replaces messages. An older copy of a message (by updated_at) never
// replaces a newer one: a list answer may be older than a notification already applied.
func (t *timeline) merge(ms ...shared.Message) {
	if t.at == nil {
		t.at = map[string]int{}
	}
	added := false
	for _, m := range ms {
		if i, ok := t.at[m.ID]; ok {
			if !m.UpdatedAt.Before(t.msgs[i].UpdatedAt) {
				t.msgs[i] = m
			}
			continue
		}
		t.msgs = append(t.msgs, m)
		t.at[m.ID] = len(t.msgs) - 1
		added = true
	}
	if !added {
		return
	}
	if n := len(t.msgs); n > 1 && !sort.SliceIsSorted(t.msgs, func(i, j int) bool { return before(t.msgs[i], t.msgs[j]) }) {
		sort.SliceStable(t.msgs, func(i, j int) bool { return before(t.msgs[i], t.msgs[j]) })
		for i, m := range t.msgs {
			t.at[m.ID] = i
		}
	}
}

// first and last return the oldest and newest message ids, or "".
func (t *timeline) first() string {
	if len(t.msgs) == 0 {
		return ""
	}
	return t.msgs[0].ID
}

func (t *timeline) last() string {
	if len(t.msgs) == 0 {
		return ""
	}
	return t.msgs[len(t.msgs)-1].ID
}
