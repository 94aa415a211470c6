package api

import (
	"net/http"

	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// A task's worktree and the landing of its change: server/task does them (worktree.go).

func (s *server) handleRepository(c *fiber.Ctx) error {
	r, err := s.tasks.Repository(c.UserContext(), c.Query("path"))
	return s.answer(c, http.StatusOK, r, err)
}

func (s *server) handleChanges(c *fiber.Ctx) error {
	changes, err := s.tasks.Changes(c.UserContext(), c.Params("task_id"))
	return s.answer(c, http.StatusOK, changes, err)
}

func (s *server) handleChangesDiff(c *fiber.Ctx) error {
	d, err := s.tasks.Diff(c.UserContext(), c.Params("task_id"), c.Query("path"))
	return s.answer(c, http.StatusOK, d, err)
}

type commitRequest struct {
	Message string `json:"message"`
}

type landRequest struct {
	Mode string `json:"mode"`
}

func (s *server) handleCommit(c *fiber.Ctx) error {
	var req commitRequest
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	changes, err := s.tasks.Commit(c.UserContext(), c.Params("task_id"), req.Message)
	return s.answer(c, http.StatusOK, changes, err)
}

func (s *server) handleMerge(c *fiber.Ctx) error {
	var req landRequest
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	changes, err := s.tasks.Merge(c.UserContext(), c.Params("task_id"), req.Mode)
	return s.answer(c, http.StatusOK, changes, err)
}

func (s *server) handlePush(c *fiber.Ctx) error {
	changes, err := s.tasks.Push(c.UserContext(), c.Params("task_id"))
	return s.answer(c, http.StatusOK, changes, err)
}

func (s *server) handleReview(c *fiber.Ctx) error {
	var req shared.Review
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	ctx := c.UserContext()
	msg, err := s.tasks.Review(ctx, accountFrom(ctx), c.Params("task_id"), req)
	return s.answer(c, http.StatusAccepted, msg, err)
}
