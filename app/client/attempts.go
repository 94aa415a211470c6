package client

import (
	"context"
	"net/url"

	"conch/shared"
)

// StartAttempts gives one prompt to several agents of a task, each in a worktree of its
// own (POST /api/v1/tasks/{id}/attempts), and returns the task's attempts.
func (c *Client) StartAttempts(ctx context.Context, taskID string, req shared.AttemptsRequest) (shared.AttemptList, error) {
	var l shared.AttemptList
	return l, c.call(ctx, "POST", attemptsPath(taskID), req, &l)
}

// Attempts lists a task's attempts for the compare table: no diff or output body.
func (c *Client) Attempts(ctx context.Context, taskID string) (shared.AttemptList, error) {
	var l shared.AttemptList
	return l, c.call(ctx, "GET", attemptsPath(taskID), nil, &l)
}

// AttemptChanges summarizes what one attempt changed (no diff bodies).
func (c *Client) AttemptChanges(ctx context.Context, taskID, sessionID string) (shared.Changes, error) {
	var ch shared.Changes
	return ch, c.call(ctx, "GET", attemptsPath(taskID)+"/"+url.PathEscape(sessionID)+"/changes", nil, &ch)
}

// AttemptDiff fetches one file's texts in one attempt.
func (c *Client) AttemptDiff(ctx context.Context, taskID, sessionID, path string) (shared.FileDiff, error) {
	var d shared.FileDiff
	return d, c.call(ctx, "GET", attemptsPath(taskID)+"/"+url.PathEscape(sessionID)+"/changes/diff?path="+url.QueryEscape(path), nil, &d)
}

// KeepAttempt lands one attempt by mode ("merge" or "rebase"; "" is merge) and closes
// the task's others; it returns the task's attempts after it.
func (c *Client) KeepAttempt(ctx context.Context, taskID, sessionID, mode string) (shared.AttemptList, error) {
	var l shared.AttemptList
	return l, c.call(ctx, "POST", attemptsPath(taskID)+"/"+url.PathEscape(sessionID)+"/keep", shared.KeepRequest{Mode: mode}, &l)
}

func attemptsPath(taskID string) string {
	return "/api/v1/tasks/" + url.PathEscape(taskID) + "/attempts"
}
