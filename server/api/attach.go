package api

import (
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"conch/shared"
)

// handleUploadAttachment stores the request's body as a file for a prompt of the session
// to carry, named by ?name=. Its type is read from the bytes (sniffType); the
// Content-Type the uploader sent is not trusted. The agent must take that type (its
// promptCapabilities): a file it cannot take is refused here, before it is stored.
func (s *server) handleUploadAttachment(c *fiber.Ctx) error {
	ctx, sessionID := c.UserContext(), c.Params("session_id")
	name := path.Base(strings.ReplaceAll(c.Query("name"), `\`, "/")) // a path's last part, from any system
	if err := shared.CheckLength("name", name, shared.MaxAttachmentName); err != nil {
		return s.fail(c, err)
	}
	if name == "." || name == "/" || strings.TrimSpace(name) == "" {
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "name is required"))
	}
	data := c.Body()
	if len(data) == 0 {
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "the file is empty"))
	}
	if len(data) > shared.MaxAttachmentBytes {
		return s.fail(c, shared.Errorf(shared.CodeTooLarge, "a file is at most %d MiB", shared.MaxAttachmentBytes>>20))
	}
	sess, err := s.store.GetSession(ctx, sessionID)
	if err != nil {
		return s.fail(c, err)
	}
	mimeType := sniffType(data)
	if why := sess.PromptCapabilities.Refusal(mimeType); why != "" {
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "%s (%s): %s", name, mimeType, why))
	}
	a, err := s.store.CreateAttachment(ctx, sessionID, name, mimeType, data)
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c.Status(http.StatusCreated), a)
}

// sniffType is a file's type as its bytes show it (the WHATWG sniffing rules), without
// parameters: an image of a type agents read, text that is UTF-8 (HTML and SVG are text
// here, never rendered), or any other type, sent as a blob.
func sniffType(data []byte) string {
	t, _, err := mime.ParseMediaType(http.DetectContentType(data))
	if err != nil || shared.IsText(t) && !utf8.Valid(data) {
		return fiber.MIMEOctetStream
	}
	return t
}

// handleGetAttachment answers a file a prompt of the session carries (or will). Only an
// image is served as its type, for an <img>; text is plain text, and anything else a
// download: a file is never served as a page of this site.
func (s *server) handleGetAttachment(c *fiber.Ctx) error {
	a, err := s.store.GetAttachment(c.UserContext(), c.Params("session_id"), c.Params("attachment_id"))
	if err != nil {
		return s.fail(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "private, max-age=86400, immutable") // a file never changes
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	switch {
	case shared.IsImage(a.MimeType):
		c.Set(fiber.HeaderContentType, a.MimeType)
	case shared.IsText(a.MimeType):
		c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	default:
		// The stored id, not the person's name: a file name made of our own characters only.
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+a.ID+`"`)
		c.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
	}
	return c.Send(a.Data)
}

// uploadRoute is the one route whose body may exceed the server's body limit, up to
// shared.MaxAttachmentBytes.
var uploadRoute = regexp.MustCompile(`^/api/v1/task-sessions/[^/]+/attachments$`)

// limitBody refuses a body over the server's limit, as Fiber would (whose own limit is
// raised to let uploads through): every route but uploadRoute keeps the server's limit.
func (s *server) limitBody(c *fiber.Ctx) error {
	if len(c.Request().Body()) > s.limit && !(c.Method() == fiber.MethodPost && uploadRoute.MatchString(c.Path())) {
		return s.fail(c, errTooLarge)
	}
	return c.Next()
}

var errTooLarge = shared.Errorf(shared.CodeTooLarge, "request body too large")
