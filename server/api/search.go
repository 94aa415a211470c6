package api

import (
	"strconv"
	"strings"

	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// handleSearch finds messages across sessions, among the tasks the caller may read.
func (s *server) handleSearch(c *fiber.Ctx) error {
	q := shared.SearchRequest{Query: strings.Clone(c.Query("q")), Cursor: strings.Clone(c.Query("cursor"))}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return s.fail(c, shared.Errorf(shared.CodeInvalid, "limit must be 1 to %d", shared.MaxSearchHits))
		}
		q.Limit = n
	}
	page, err := s.store.Search(c.UserContext(), q, task.Readable(accountFrom(c.UserContext())))
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, page)
}
