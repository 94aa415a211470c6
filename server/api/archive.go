package api

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"

	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// handleExport answers a task's archive (store.ExportTask), streamed as it is read: a
// task of any size is exported with bounded memory. ?redact=1 replaces secret-like strings.
func (s *server) handleExport(c *fiber.Ctx) error {
	ctx, acc, id := c.UserContext(), accountFrom(c.UserContext()), strings.Clone(c.Params("task_id"))
	redact := false
	switch c.Query("redact") {
	case "", "0", "false":
	case "1", "true":
		redact = true
	default:
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "redact is 1 or 0"))
	}
	if _, err := s.tasks.GetTask(ctx, acc, id); err != nil {
		return s.fail(c, err)
	}
	c.Set(fiber.HeaderContentType, "application/gzip")
	// The id is the store's own (checked above): a file name of our own characters only.
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="conch-task-`+id+`.tar.gz"`)
	// The writer runs after the handler has returned, while the answer is sent.
	ctx = context.WithoutCancel(ctx)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		if err := s.tasks.ExportTask(ctx, acc, id, redact, w); err != nil {
			// The status is sent: the archive ends short, which its reader sees (gzip's
			// checksum is missing).
			s.log.Error("export task", "task", id, "err", err)
		}
	})
	return nil
}

// handleImport stores the task an archive holds (the body, at most shared.MaxImportBytes)
// as a new task of the account's.
func (s *server) handleImport(c *fiber.Ctx) error {
	body, err := s.readBody(c)
	if err != nil {
		return s.fail(c, err)
	}
	t, err := s.tasks.ImportTask(c.UserContext(), accountFrom(c.UserContext()), bytes.NewReader(body))
	if err == nil {
		c.Locals(madeTaskKey, t.ID)
	}
	return s.answer(c, http.StatusCreated, t, err)
}
