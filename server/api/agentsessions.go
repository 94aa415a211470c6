package api

import (
	"net/http"
	"strings"

	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// An agent's own earlier sessions in a task's directory (ACP session/list), and their
// import: server/task and server/acp (lifecycle.go) do them.

func (s *server) handleListAgentSessions(c *fiber.Ctx) error {
	page, err := s.tasks.ListAgentSessions(c.UserContext(), c.Params("task_id"),
		strings.Clone(c.Query("agent")), strings.Clone(c.Query("cwd")), strings.Clone(c.Query("cursor")))
	return s.answer(c, http.StatusOK, page, err)
}

func (s *server) handleImportAgentSessions(c *fiber.Ctx) error {
	var req shared.ImportAgentSessions
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	sessions, err := s.tasks.ImportAgentSessions(c.UserContext(), c.Params("task_id"), req)
	return s.answer(c, http.StatusCreated, shared.ImportedSessions{Sessions: sessions}, err)
}
