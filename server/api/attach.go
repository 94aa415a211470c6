package api

import (
	"net/http"
	"regexp"

	"github.com/gofiber/fiber/v2"

	"conch/shared"
)

// handleUploadAttachment stores the request's body as a file for a prompt of the session
// to carry, named by ?name= (task.Service.Attach).
func (s *server) handleUploadAttachment(c *fiber.Ctx) error {
	a, err := s.tasks.Attach(c.UserContext(), c.Params("session_id"), c.Query("name"), c.Body())
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

// limitBody refuses a body over the server's limit, as Fiber would (whose own limit is
// raised to let uploads and imports through): every route but uploadRoute and importRoute
// keeps the server's limit.
func (s *server) limitBody(c *fiber.Ctx) error {
	n, post := len(c.Request().Body()), c.Method() == fiber.MethodPost
	switch {
	case n <= s.limit:
	case post && c.Path() == importRoute:
		if n > shared.MaxImportBytes {
			return s.fail(c, shared.Errorf(shared.CodeTooLarge, "an archive is at most %d MiB", shared.MaxImportBytes>>20))
		}
	case !(post && uploadRoute.MatchString(c.Path())):
		return s.fail(c, errTooLarge)
	}
	return c.Next()
}

var errTooLarge = shared.Errorf(shared.CodeTooLarge, "request body too large")
