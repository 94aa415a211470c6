package ui

import (
	"sort"

	"conch/shared"
)

// chunkSize is how many live messages a chunk takes before a new one starts.
const chunkSize = 100

// timeline is a session's messages in (created_at, id) order, one entry per id. Lists,
// notifications and the answer to a prompt all merge into it, so a message seen twice
// (a reconnect's re-list, a notification racing the POST answer) is never doubled.
//
// Messages are kept in chunks, because go-app diffs children by position and re-renders
// a whole component when one of its fields changes:
//   - older[0] is the first page loaded; each "load older" adds an older chunk at the end.
//     They render nested, newest outermost (see Chunk), so loading older messages adds
//     nodes without moving existing ones (prepending to a flat list would rebuild every row).
//   - newer holds what arrives live once older[0] is full, in chunks of chunkSize appended
//     after it, so a long live session re-renders only its last chunk on each update.
//
// A chunk's version changes whenever its messages do, so only changed chunks re-render.
type timeline struct {
	older []*chunk
	newer []*chunk
	at    map[string]*chunk // id -> its chunk
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
// The timeline keeps messages as the page shows them (shared.Message.Visible): every
// message on its way to the page enters here or in addOlder.
func (t *timeline) merge(ms ...shared.Message) {
	if len(t.older) == 0 {
		t.older = []*chunk{{}}
	}
	for _, m := range ms {
		m = m.Visible()
		if c, ok := t.at[m.ID]; ok {
			i := c.index(m.ID)
			if !m.UpdatedAt.Before(c.msgs[i].UpdatedAt) {
				c.msgs[i] = m
				c.version++
			}
			continue
		}
		c := t.place(m)
		c.insert(m)
		t.index(c, m.ID)
	}
}

// place returns the chunk a new message belongs to: the newest chunk whose first message
// is not after it, a fresh chunk when that one is full and the message comes last, and
// the oldest chunk for anything older than every chunk.
func (t *timeline) place(m shared.Message) *chunk {
	chunks := make([]*chunk, 0, len(t.newer)+len(t.older))
	for i := len(t.newer) - 1; i >= 0; i-- {
		chunks = append(chunks, t.newer[i])
	}
	chunks = append(chunks, t.older...)
	head := chunks[0]
	if n := len(head.msgs); n >= chunkSize && before(head.msgs[n-1], m) {
		c := &chunk{}
		t.newer = append(t.newer, c)
		return c
	}
	for _, c := range chunks {
		if len(c.msgs) == 0 || !before(m, c.msgs[0]) {
			return c
		}
	}
	return chunks[len(chunks)-1]
}

// addOlder adds a page listed with `before`: a new, older chunk.
func (t *timeline) addOlder(ms []shared.Message) {
	c := &chunk{}
	for _, m := range ms {
		if _, ok := t.at[m.ID]; !ok {
			c.insert(m.Visible())
		}
	}
	if len(c.msgs) == 0 {
		return
	}
	if len(t.older) == 0 {
		t.older = []*chunk{{}}
	}
	t.older = append(t.older, c)
	for _, m := range c.msgs {
		t.index(c, m.ID)
	}
}

func (t *timeline) index(c *chunk, id string) {
	if t.at == nil {
		t.at = map[string]*chunk{}
	}
	t.at[id] = c
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

// ordered returns every chunk, oldest first.
func (t *timeline) ordered() []*chunk {
	out := make([]*chunk, 0, len(t.older)+len(t.newer))
	for i := len(t.older) - 1; i >= 0; i-- {
		out = append(out, t.older[i])
	}
	return append(out, t.newer...)
}

// len is the number of messages.
func (t *timeline) len() int { return len(t.at) }

// all returns the messages in order.
func (t *timeline) all() []shared.Message {
	var out []shared.Message
	for _, c := range t.ordered() {
		out = append(out, c.msgs...)
	}
	return out
}

// first and last return the oldest and newest message ids, or "".
func (t *timeline) first() string {
	for _, c := range t.ordered() {
		if len(c.msgs) > 0 {
			return c.msgs[0].ID
		}
	}
	return ""
}

func (t *timeline) last() string {
	chunks := t.ordered()
	for i := len(chunks) - 1; i >= 0; i-- {
		if c := chunks[i]; len(c.msgs) > 0 {
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

func views(chunks []*chunk) []ChunkView {
	v := make([]ChunkView, len(chunks))
	for i, c := range chunks {
		v[i] = ChunkView{Msgs: c.msgs, Version: c.version}
	}
	return v
}
