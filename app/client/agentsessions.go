package client

import (
	"context"
	"net/url"

	"conch/shared"
)

// AgentSessions lists one page of agent's own earlier sessions in the task's directory
// (cwd: required for a task on no repository), from cursor ("" for the first page).
func (c *Client) AgentSessions(ctx context.Context, taskID, agent, cwd, cursor string) (shared.AgentSessionPage, error) {
	v := url.Values{"agent": {agent}}
	if cwd != "" {
		v.Set("cwd", cwd)
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	var p shared.AgentSessionPage
	return p, c.call(ctx, "GET", "/api/v1/tasks/"+url.PathEscape(taskID)+"/agent-sessions?"+v.Encode(), nil, &p)
}

// ImportAgentSessions imports some of them as stopped sessions of the task, each resumed
// at its first prompt, and returns the new sessions.
func (c *Client) ImportAgentSessions(ctx context.Context, taskID string, req shared.ImportAgentSessions) ([]shared.Session, error) {
	var out shared.ImportedSessions
	err := c.call(ctx, "POST", "/api/v1/tasks/"+url.PathEscape(taskID)+"/agent-sessions/import", req, &out)
	return out.Sessions, err
}
