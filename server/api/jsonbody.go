package api

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// jsonBuffers hold encoded answers until fasthttp has copied them into its own pooled
// body buffer (SetBody copies; c.Send would keep the slice). c.JSON (json.Marshal) allocated every answer afresh: a page of 100
// messages is 40 KiB of garbage per request, and at 2 cores the collections it caused
// made the tail of the latency (docs/PERFORMANCE.md).
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledJSON keeps the rare huge answer's buffer out of the pool.
const maxPooledJSON = 1 << 20

// sendJSON answers v as JSON: the same bytes and Content-Type as c.JSON.
func sendJSON(c *fiber.Ctx, v any) error {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledJSON {
			buf.Reset()
			jsonBuffers.Put(buf)
		}
	}()
	// An Encoder writes its pooled encoding buffer to buf; json.Marshal copies it out.
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Response().SetBody(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) // Encode ends with a newline; Marshal does not
	return nil
}
