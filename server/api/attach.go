package api

import (
	"io"
	"net/http"
	"regexp"

	"github.com/gofiber/fiber/v2"

	"conch/shared"
)

// handleUploadAttachment stores the request's body as a file for a prompt of the session
// to carry, named by ?name= (task.Service.Attach).
func (s *server) handleUploadAttachment(c *fiber.Ctx) error {
	body, err := s.readBody(c)
	if err != nil {
		return s.fail(c, err)
	}
	a, err := s.tasks.Attach(c.UserContext(), c.Params("session_id"), c.Query("name"), body)
	return s.answer(c, http.StatusCreated, a, err)
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

// importRoute is the route whose body may reach shared.MaxImportBytes.
const importRoute = "/api/v1/tasks/import"

// bodyLimit is the most a request's body may hold: the server's limit, but for an upload
// or an import, whose handlers read their bodies once the role check let them in.
func (s *server) bodyLimit(c *fiber.Ctx) (limit int, late bool) {
	switch post := c.Method() == fiber.MethodPost; {
	case post && c.Path() == importRoute:
		return shared.MaxImportBytes, true
	case post && uploadRoute.MatchString(c.Path()):
		return shared.MaxAttachmentBytes, true
	}
	return s.limit, false
}

// limitBody bounds request bodies, which fasthttp streams (it reads at most 8 KiB before a
// handler runs): a stated length over the route's limit is refused at once, a body is read
// here up to the server's limit, and an upload's or import's body by its handler (readBody),
// so that nobody makes the server read megabytes before the role check.
func (s *server) limitBody(c *fiber.Ctx) error {
	limit, late := s.bodyLimit(c)
	if c.Request().Header.ContentLength() > limit {
		c.Response().SetConnectionClose() // the rest of the body is never read
		return s.fail(c, tooLarge(c, limit))
	}
	if !late {
		if _, err := s.readBody(c); err != nil {
			return s.fail(c, err)
		}
	}
	err := c.Next()
	if c.Request().BodyStream() != nil {
		c.Response().SetConnectionClose() // refused before its handler read the body
	}
	return err
}

// readBody reads the request's body, up to its route's limit, once.
func (s *server) readBody(c *fiber.Ctx) ([]byte, error) {
	req := c.Request()
	stream := req.BodyStream()
	if stream == nil {
		return c.Body(), nil
	}
	limit, _ := s.bodyLimit(c)
	body, err := io.ReadAll(io.LimitReader(stream, int64(limit)+1))
	if err != nil {
		c.Response().SetConnectionClose()
		return nil, shared.Errorf(shared.CodeInvalid, "the request's body could not be read: %v", err)
	}
	if len(body) > limit {
		c.Response().SetConnectionClose()
		return nil, tooLarge(c, limit)
	}
	req.SetBodyRaw(body)
	return c.Body(), nil
}

// tooLarge says how large the route's bodies may be.
func tooLarge(c *fiber.Ctx, limit int) error {
	if c.Path() == importRoute {
		return shared.Errorf(shared.CodeTooLarge, "an archive is at most %d MiB", limit>>20)
	}
	return errTooLarge
}

var errTooLarge = shared.Errorf(shared.CodeTooLarge, "request body too large")
