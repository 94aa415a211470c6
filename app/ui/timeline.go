package ui

import (
	"sort"

	"conch/shared"
)

// timeline is a session's messages in (created_at, id) order, one entry per id. Lists,
// notifications and the answer to a prompt all merge into it, so a message seen twice
// (a reconnect's re-list, a notification racing the POST answer) is never doubled.
//
// Messages are kept in chunks: chunks[0] holds the first page loaded and everything that
// arrives live, and each "load older" adds an older chunk at the end. The chunks render
// nested, newest outermost (see Chunk), so loading older messages adds nodes without
// moving existing ones: go-app diffs children by position, and prepending to one flat list
// would rebuild every row. A chunk's version changes whenever its messages do, so only
// changed chunks re-render.
type timeline struct {
	chunks []*chunk
	at     map[string]int // id -> chunk index
}

type chunk struct {
	msgs    []shared.Message
	version int
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
	if len(t.chunks) == 0 {
		t.chunks = []*chunk{{}}
	}
	for _, m := range ms {
		if ci, ok := t.at[m.ID]; ok {
			c := t.chunks[ci]
			i := c.index(m.ID)
			if !m.UpdatedAt.Before(c.msgs[i].UpdatedAt) {
				c.msgs[i] = m
				c.version++
			}
			continue
		}
		// The newest chunk whose first message is not after m takes it; anything older
		// than every chunk goes to the oldest.
		ci := len(t.chunks) - 1
		for i, c := range t.chunks {
			if len(c.msgs) == 0 || !before(m, c.msgs[0]) {
				ci = i
				break
			}
		}
		t.chunks[ci].insert(m)
		t.index(ci, m.ID)
	}
}

// addOlder adds a page listed with `before`: a new, older chunk.
func (t *timeline) addOlder(ms []shared.Message) {
	c := &chunk{}
	for _, m := range ms {
		if _, ok := t.at[m.ID]; !ok {
			c.insert(m)
		}
	}
	if len(c.msgs) == 0 {
		return
	}
	t.chunks = append(t.chunks, c)
	for _, m := range c.msgs {
		t.index(len(t.chunks)-1, m.ID)
	}
}

func (t *timeline) index(ci int, id string) {
	if t.at == nil {
		t.at = map[string]int{}
	}
	t.at[id] = ci
}

// insert keeps the chunk sorted; live messages almost always go at the end.
func (c *chunk) insert(m shared.Message) {
	i := sort.Search(len(c.msgs), func(i int) bool { return before(m, c.msgs[i]) })
	c.msgs = append(c.msgs, shared.Message{})
	copy(c.msgs[i+1:], c.msgs[i:])
	c.msgs[i] = m
	c.version++
}

func (c *chunk) index(id string) int {
	for i := len(c.msgs) - 1; i >= 0; i-- { // recent messages change most
		if c.msgs[i].ID == id {
			return i
		}
	}
	panic("ui: timeline index out of sync for " + id)
}

// len is the number of messages.
func (t *timeline) len() int { return len(t.at) }

// all returns the messages in order (for tests).
func (t *timeline) all() []shared.Message {
	var out []shared.Message
	for i := len(t.chunks) - 1; i >= 0; i-- {
		out = append(out, t.chunks[i].msgs...)
	}
	return out
}

// first and last return the oldest and newest message ids, or "".
func (t *timeline) first() string {
	for i := len(t.chunks) - 1; i >= 0; i-- {
		if c := t.chunks[i]; len(c.msgs) > 0 {
			return c.msgs[0].ID
		}
	}
	return ""
}

func (t *timeline) last() string {
	for _, c := range t.chunks {
		if len(c.msgs) > 0 {
			return c.msgs[len(c.msgs)-1].ID
		}
	}
	return ""
}

// ChunkView is what a Chunk renders: fresh values on every render, so go-app sees a
// change exactly when a version differs.
type ChunkView struct {
	Msgs    []shared.Message
	Version int
}

func (t *timeline) views() []ChunkView {
	v := make([]ChunkView, len(t.chunks))
	for i, c := range t.chunks {
		v[i] = ChunkView{Msgs: c.msgs, Version: c.version}
	}
	return v
}
