package api

import (
	"net/http"

	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// Attempts of a task: server/task does them (attempts.go).

func (s *server) handleStartAttempts(c *fiber.Ctx) error {
	var req shared.AttemptsRequest
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	ctx := c.UserContext()
	list, err := s.tasks.StartAttempts(ctx, accountFrom(ctx), c.Params("task_id"), req)
	return s.answer(c, http.StatusCreated, list, err)
}

func (s *server) handleListAttempts(c *fiber.Ctx) error {
	list, err := s.tasks.ListAttempts(c.UserContext(), c.Params("task_id"))
	return s.answer(c, http.StatusOK, list, err)
}

func (s *server) handleAttemptChanges(c *fiber.Ctx) error {
	changes, err := s.tasks.AttemptChanges(c.UserContext(), c.Params("task_id"), c.Params("session_id"))
	return s.answer(c, http.StatusOK, changes, err)
}

func (s *server) handleAttemptDiff(c *fiber.Ctx) error {
	d, err := s.tasks.AttemptDiff(c.UserContext(), c.Params("task_id"), c.Params("session_id"), c.Query("path"))
	return s.answer(c, http.StatusOK, d, err)
}

func (s *server) handleKeepAttempt(c *fiber.Ctx) error {
	var req shared.KeepRequest
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	ctx := c.UserContext()
	list, err := s.tasks.KeepAttempt(ctx, accountFrom(ctx), c.Params("task_id"), c.Params("session_id"), req)
	return s.answer(c, http.StatusOK, list, err)
}
