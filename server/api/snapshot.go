package api

import (
	"container/list"
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"conch/shared"
)

// snapshotCacheBytes bounds the encoded snapshots kept in memory: about 100 commands at
// the 256 KiB bound of both streams.
const snapshotCacheBytes = 64 << 20

// handleShellOutput answers the output snapshot (docs/API.md, "Output: the snapshot, and polling politely"),
// or with offsets only what came after them (Extensions, "Shell output, richer").
func (s *server) handleShellOutput(c *fiber.Ctx) error {
	from, offsets, err := offsetsOf(c)
	if err != nil {
		return s.fail(c, err)
	}
	return s.snapshot(c, s.store.GetShellOutputStamp, !offsets, func(ctx context.Context, sessionID, messageID string) (any, time.Time, error) {
		snap, err := s.store.GetShellOutput(ctx, sessionID, messageID)
		if offsets {
			return snap.Since(from), snap.UpdatedAt, err
		}
		return snap, snap.UpdatedAt, err
	})
}

// handleToolContent answers the content of a tool call that is not a shell command
// (docs/API.md, "Routes"), with the same rules.
func (s *server) handleToolContent(c *fiber.Ctx) error {
	return s.snapshot(c, s.store.GetToolContentStamp, true, func(ctx context.Context, sessionID, messageID string) (any, time.Time, error) {
		snap, err := s.store.GetToolContent(ctx, sessionID, messageID)
		return snap, snap.UpdatedAt, err
	})
}

// handleErrorDetail answers the whole text of an error message, of which messages carry
// the headline, with the same rules.
func (s *server) handleErrorDetail(c *fiber.Ctx) error {
	return s.snapshot(c, s.store.GetErrorDetailStamp, true, func(ctx context.Context, sessionID, messageID string) (any, time.Time, error) {
		d, err := s.store.GetErrorDetail(ctx, sessionID, messageID)
		return d, d.UpdatedAt, err
	})
}

// snapshot answers a body fetched on demand. A cheap scoped lookup of the body's version
// (stamp) comes first: it answers 404 without reading a body, 304 to a client that
// already holds this version, and otherwise, when cached, picks the encoded body (and its
// compressed forms) from the cache while it has not changed since get read it. An answer
// that differs per reader (from offsets) is built and compressed per request.
func (s *server) snapshot(c *fiber.Ctx, stampOf func(ctx context.Context, sessionID, messageID string) (time.Time, error),
	cached bool, get func(ctx context.Context, sessionID, messageID string) (any, time.Time, error)) error {
	ctx, sessionID, messageID := c.UserContext(), c.Params("session_id"), c.Params("message_id")
	stamp, err := stampOf(ctx, sessionID, messageID)
	if err != nil {
		// One text for absent, cross-session and of another kind alike (docs/API.md).
		return s.fail(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-cache")
	etag := snapshotETag(messageID, stamp)
	if c.Get(fiber.HeaderIfNoneMatch) == etag {
		c.Set(fiber.HeaderETag, etag)
		return c.SendStatus(fiber.StatusNotModified)
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	var body []byte
	if cached {
		body = s.snapshots.get(messageID, stamp)
	}
	if body == nil {
		snap, at, err := get(ctx, sessionID, messageID)
		if err != nil {
			return s.fail(c, err)
		}
		if body, err = json.Marshal(snap); err != nil {
			return s.fail(c, err)
		}
		if !at.Equal(stamp) { // the body read is newer than the lookup
			stamp, etag = at, snapshotETag(messageID, at)
		}
		if !cached {
			c.Set(fiber.HeaderETag, etag)
			return sendEncoded(c, body, func(name string) []byte { return compress(name, body) })
		}
		s.snapshots.put(messageID, stamp, body)
	}
	c.Set(fiber.HeaderETag, etag)
	return sendEncoded(c, body, func(name string) []byte { return s.snapshots.encoded(messageID, stamp, name, body) })
}

// offsetsOf reads stdout_offset and stderr_offset (either may be left out: 0); ok says
// the request named at least one.
func offsetsOf(c *fiber.Ctx) (from shared.Offsets, ok bool, err error) {
	args := c.Context().QueryArgs()
	for _, o := range []struct {
		name string
		to   *int64
	}{{"stdout_offset", &from.Stdout}, {"stderr_offset", &from.Stderr}} {
		if !args.Has(o.name) {
			continue
		}
		ok = true
		v, perr := strconv.ParseInt(string(args.Peek(o.name)), 10, 64)
		if perr != nil || v < 0 {
			return from, ok, shared.Errorf(shared.CodeInvalid, "%s must be a whole number of bytes, 0 or more", o.name)
		}
		*o.to = v
	}
	return from, ok, nil
}

// handleShellOutputRaw answers one stream of the stored output as a text file to save
// (docs/API.md, "Output: the snapshot, and polling politely"): the stored bytes exactly, escape
// sequences included. Not found as for the snapshot.
func (s *server) handleShellOutputRaw(c *fiber.Ctx) error {
	stream := c.Query("stream")
	if stream != "stdout" && stream != "stderr" {
		return s.fail(c, errStream)
	}
	snap, err := s.store.GetShellOutput(c.UserContext(), c.Params("session_id"), c.Params("message_id"))
	if err != nil {
		return s.fail(c, err)
	}
	text := snap.Output.Stdout
	if stream == "stderr" {
		text = snap.Output.Stderr
	}
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	// The stored id, not the path's: a file name made of our own characters only.
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+snap.MessageID+"-"+stream+`.txt"`)
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	body := []byte(text)
	return sendEncoded(c, body, func(name string) []byte { return compress(name, body) })
}

var errStream = shared.Errorf(shared.CodeInvalid, "stream must be stdout or stderr")

func snapshotETag(messageID string, stamp time.Time) string {
	return `"` + messageID + "." + strconv.FormatInt(stamp.UnixNano(), 36) + `"`
}

// snapshotCache keeps encoded snapshots by message id, each valid for one updated_at,
// with the compressed forms asked for so far (a popular output is compressed once),
// least recently used first out once the bytes bound is reached.
type snapshotCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *cachedSnapshot, most recent at the front
	byID  map[string]*list.Element
}

type cachedSnapshot struct {
	id       string
	stamp    time.Time
	body     []byte
	variants map[string][]byte // by encoding
}

func (e *cachedSnapshot) size() int {
	n := len(e.body)
	for _, v := range e.variants {
		n += len(v)
	}
	return n
}

func newSnapshotCache(max int) *snapshotCache {
	return &snapshotCache{max: max, order: list.New(), byID: map[string]*list.Element{}}
}

// get returns the encoded snapshot of id at stamp, or nil.
func (c *snapshotCache) get(id string, stamp time.Time) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entry(id, stamp); e != nil {
		return e.body
	}
	return nil
}

// entry returns the entry of id at stamp, now the most recent, or nil. c.mu is held.
func (c *snapshotCache) entry(id string, stamp time.Time) *cachedSnapshot {
	e, ok := c.byID[id]
	if !ok || !e.Value.(*cachedSnapshot).stamp.Equal(stamp) {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedSnapshot)
}

func (c *snapshotCache) put(id string, stamp time.Time, body []byte) {
	if len(body) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok {
		c.remove(e)
	}
	c.byID[id] = c.order.PushFront(&cachedSnapshot{id: id, stamp: stamp, body: body})
	c.size += len(body)
	c.evict()
}

// encoded returns body, the snapshot of id at stamp, in the named encoding: from the
// cache, or compressed now and kept with it while it is cached.
func (c *snapshotCache) encoded(id string, stamp time.Time, name string, body []byte) []byte {
	c.mu.Lock()
	if e := c.entry(id, stamp); e != nil && e.variants[name] != nil {
		c.mu.Unlock()
		return e.variants[name]
	}
	c.mu.Unlock()
	out := compress(name, body) // outside the lock: other answers go on meanwhile
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entry(id, stamp); e != nil && e.variants[name] == nil {
		if e.variants == nil {
			e.variants = map[string][]byte{}
		}
		e.variants[name] = out
		c.size += len(out)
		c.evict()
	}
	return out
}

func (c *snapshotCache) evict() {
	for c.size > c.max {
		c.remove(c.order.Back())
	}
}

func (c *snapshotCache) remove(e *list.Element) {
	v := c.order.Remove(e).(*cachedSnapshot)
	delete(c.byID, v.id)
	c.size -= v.size()
}
