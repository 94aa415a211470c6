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

// handleShellOutput answers the output snapshot (CONTRACT.md, "The output snapshot").
func (s *server) handleShellOutput(c *fiber.Ctx) error {
	return s.snapshot(c, s.store.GetShellOutputStamp, func(ctx context.Context, sessionID, messageID string) (any, time.Time, error) {
		snap, err := s.store.GetShellOutput(ctx, sessionID, messageID)
		return snap, snap.UpdatedAt, err
	})
}

// handleToolContent answers the content of a tool call that is not a shell command
// (CONTRACT.md, "Tool content on demand"), with the same rules.
func (s *server) handleToolContent(c *fiber.Ctx) error {
	return s.snapshot(c, s.store.GetToolContentStamp, func(ctx context.Context, sessionID, messageID string) (any, time.Time, error) {
		snap, err := s.store.GetToolContent(ctx, sessionID, messageID)
		return snap, snap.UpdatedAt, err
	})
}

// snapshot answers a body fetched on demand. A cheap scoped lookup of the body's version
// (stamp) comes first: it answers 404 without reading a body, 304 to a client that
// already holds this version, and otherwise picks the encoded body from the cache when it
// has not changed since it was read (get reads it).
func (s *server) snapshot(c *fiber.Ctx, stampOf func(ctx context.Context, sessionID, messageID string) (time.Time, error),
	get func(ctx context.Context, sessionID, messageID string) (any, time.Time, error)) error {
	ctx, sessionID, messageID := c.UserContext(), c.Params("session_id"), c.Params("message_id")
	stamp, err := stampOf(ctx, sessionID, messageID)
	if err != nil {
		// One text for absent, cross-session and of another kind alike (CONTRACT.md).
		return s.fail(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-cache")
	if etag := snapshotETag(messageID, stamp); c.Get(fiber.HeaderIfNoneMatch) == etag {
		c.Set(fiber.HeaderETag, etag)
		return c.SendStatus(fiber.StatusNotModified)
	}
	body := s.snapshots.get(messageID, stamp)
	if body == nil {
		snap, at, err := get(ctx, sessionID, messageID)
		if err != nil {
			return s.fail(c, err)
		}
		if body, err = json.Marshal(snap); err != nil {
			return s.fail(c, err)
		}
		stamp = at // the body read may be newer than the lookup
		s.snapshots.put(messageID, stamp, body)
	}
	c.Set(fiber.HeaderETag, snapshotETag(messageID, stamp))
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}

// handleShellOutputRaw answers one stream of the stored output as a text file to save
// (CONTRACT.md, Extensions, "Shell output, richer"): the stored bytes exactly, escape
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
	return c.SendString(text)
}

var errStream = shared.Errorf(shared.CodeInvalid, "stream must be stdout or stderr")

func snapshotETag(messageID string, stamp time.Time) string {
	return `"` + messageID + "." + strconv.FormatInt(stamp.UnixNano(), 36) + `"`
}

// snapshotCache keeps encoded snapshots by message id, each valid for one updated_at,
// least recently used first out once the bytes bound is reached.
type snapshotCache struct {
	mu    sync.Mutex
	max   int
	size  int
	order *list.List // of *cachedSnapshot, most recent at the front
	byID  map[string]*list.Element
}

type cachedSnapshot struct {
	id    string
	stamp time.Time
	body  []byte
}

func newSnapshotCache(max int) *snapshotCache {
	return &snapshotCache{max: max, order: list.New(), byID: map[string]*list.Element{}}
}

// get returns the encoded snapshot of id at stamp, or nil.
func (c *snapshotCache) get(id string, stamp time.Time) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[id]
	if !ok || !e.Value.(*cachedSnapshot).stamp.Equal(stamp) {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedSnapshot).body
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
	for c.size > c.max {
		c.remove(c.order.Back())
	}
}

func (c *snapshotCache) remove(e *list.Element) {
	v := c.order.Remove(e).(*cachedSnapshot)
	delete(c.byID, v.id)
	c.size -= len(v.body)
}
