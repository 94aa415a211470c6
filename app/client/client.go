// Package client is the typed client of Conch's HTTP API (/api/v1) and WebSocket (/ws).
// The same API builds for the browser, where requests go through the browser's fetch
// with one AbortController each (transport_js.go), and for the host, where they go
// through net/http (transport.go): the UI, the tests and scripts share it.
//
// A failure the server reports, over REST or the WebSocket alike, wraps its *shared.Error:
// compare shared.ErrorCode(err) with shared.CodeNotFound and the other codes.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"conch/shared"
)

// ErrUnreachable wraps every failure to reach the server (offline, server down, connection
// reset): the UI says it is offline rather than showing an error.
var ErrUnreachable = errors.New("server unreachable")

// errNotModified is a 304 answer to a conditional request: the version held is current.
var errNotModified = errors.New("not modified")

// Client talks to one Conch server. The zero value is not usable: call New.
type Client struct {
	base  string // scheme://host[:port], or "" for the page's own origin in the browser
	token string // sent as a Bearer token; in the browser the sign-in cookie does this
}

// New returns a client of the server at base (e.g. "http://127.0.0.1:8080"). In the
// browser, base "" means the origin the page came from.
func New(base string) *Client {
	return &Client{base: strings.TrimRight(base, "/")}
}

// WithToken returns a client that sends token (the server's --token) on every request
// and WebSocket dial, for scripts and tests. A page in the browser needs none: it signs
// in once and the cookie goes with every request.
func (c *Client) WithToken(token string) *Client {
	cc := *c
	cc.token = token
	return &cc
}

// Agents lists the agent profiles a session can run.
func (c *Client) Agents(ctx context.Context) ([]shared.Agent, error) {
	var out struct {
		Agents []shared.Agent `json:"agents"`
	}
	return out.Agents, c.call(ctx, "GET", "/api/v1/agents", nil, &out)
}

// ListTasks lists tasks, newest first, with their sessions.
func (c *Client) ListTasks(ctx context.Context) ([]shared.Task, error) {
	var out struct {
		Tasks []shared.Task `json:"tasks"`
	}
	return out.Tasks, c.call(ctx, "GET", "/api/v1/tasks", nil, &out)
}

// CreateTask creates a task.
func (c *Client) CreateTask(ctx context.Context, title, description string) (shared.Task, error) {
	return c.CreateTaskOn(ctx, title, description, "", "")
}

// CreateTaskOn creates a task on a git repository (an absolute path on the server) and
// its base branch ("": the repository's current branch); its sessions run in a worktree
// of their own. dirs are additional directories its agents may work in (absolute paths
// on the server).
func (c *Client) CreateTaskOn(ctx context.Context, title, description, repo, base string, dirs ...string) (shared.Task, error) {
	var t shared.Task
	in := map[string]any{"title": title, "description": description}
	if repo != "" {
		in["repo"], in["base_branch"] = repo, base
	}
	if len(dirs) > 0 {
		in["additional_directories"] = dirs
	}
	return t, c.call(ctx, "POST", "/api/v1/tasks", in, &t)
}

// CreateTaskFrom creates a task on the git repository at repoURL (a URL git can clone, or
// an absolute path on the runners' disks) from its branch base: each of its sessions runs
// on a runner, in a worktree of the task's branch made there.
// An empty repoURL makes a task on no repository, as CreateTask.
func (c *Client) CreateTaskFrom(ctx context.Context, title, description, repoURL, base string) (shared.Task, error) {
	var t shared.Task
	in := map[string]any{"title": title, "description": description}
	if repoURL != "" {
		in["repo_url"], in["base_branch"] = repoURL, base
	}
	return t, c.call(ctx, "POST", "/api/v1/tasks", in, &t)
}

// Repository says what a directory on the server (an absolute path) is to git: the top
// of the work tree it is in, its current branch and its branches; Top "" for none.
func (c *Client) Repository(ctx context.Context, path string) (shared.Repository, error) {
	var r shared.Repository
	return r, c.call(ctx, "GET", "/api/v1/repository?path="+url.QueryEscape(path), nil, &r)
}

// SignOut ends the browser's sign-in (the server's cookie); a client with a token has
// nothing to end.
func (c *Client) SignOut(ctx context.Context) error {
	return c.call(ctx, "POST", "/logout", nil, nil)
}

// DeleteTask deletes a task with its sessions, messages and stored outputs; its running
// agents are stopped first.
func (c *Client) DeleteTask(ctx context.Context, id string) error {
	return c.call(ctx, "DELETE", "/api/v1/tasks/"+url.PathEscape(id), nil, nil)
}

// StartSession starts an agent on a task; cwd "" lets the server choose.
func (c *Client) StartSession(ctx context.Context, taskID, agent, cwd string) (shared.Session, error) {
	var s shared.Session
	in := map[string]string{"agent": agent}
	if cwd != "" {
		in["cwd"] = cwd
	}
	return s, c.call(ctx, "POST", "/api/v1/tasks/"+url.PathEscape(taskID)+"/sessions", in, &s)
}

// GetSession returns one session.
func (c *Client) GetSession(ctx context.Context, id string) (shared.Session, error) {
	var s shared.Session
	return s, c.call(ctx, "GET", "/api/v1/task-sessions/"+url.PathEscape(id), nil, &s)
}

// ListMessages returns a page of q.SessionID's messages (summaries only), as Conn.List does.
func (c *Client) ListMessages(ctx context.Context, q shared.ListRequest) (shared.MessagePage, error) {
	var p shared.MessagePage
	path := "/api/v1/task-sessions/" + url.PathEscape(q.SessionID) + "/messages"
	if v := q.Query(); len(v) > 0 {
		path += "?" + v.Encode()
	}
	return p, c.call(ctx, "GET", path, nil, &p)
}

// GetMessage returns one message (its summary, never an output body) by id alone.
func (c *Client) GetMessage(ctx context.Context, id string) (shared.Message, error) {
	var m shared.Message
	return m, c.call(ctx, "GET", "/api/v1/messages/"+url.PathEscape(id), nil, &m)
}

// SendMessage posts a prompt; the agent's turn runs in the background. A repeated
// clientMessageID returns the first message and starts nothing. attachments are ids of
// files uploaded to the session (UploadAttachment), sent after the text.
func (c *Client) SendMessage(ctx context.Context, sessionID, content, clientMessageID string, attachments ...string) (shared.Message, error) {
	var m shared.Message
	in := shared.AddRequest{Content: content, ClientMessageID: clientMessageID, Attachments: attachments}
	return m, c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/messages", in, &m)
}

// UploadAttachment stores a file for a prompt of the session to carry; the server reads
// its type from the bytes, and refuses one the session's agent cannot take.
func (c *Client) UploadAttachment(ctx context.Context, sessionID, name string, data []byte) (shared.Attachment, error) {
	var a shared.Attachment
	return a, c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/attachments?name="+url.QueryEscape(name), rawBody(data), &a)
}

// AttachmentURL is where a file a prompt carries is served (an <img>'s source).
func (c *Client) AttachmentURL(sessionID, id string) string {
	return c.base + "/api/v1/task-sessions/" + url.PathEscape(sessionID) + "/attachments/" + url.PathEscape(id)
}

// AttachmentText fetches a text file a prompt carries.
func (c *Client) AttachmentText(ctx context.Context, sessionID, id string) (string, error) {
	var body []byte
	err := c.call(ctx, "GET", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/attachments/"+url.PathEscape(id), nil, &body)
	return string(body), err
}

// rawBody is a request body sent as it is (application/octet-stream), not as JSON.
type rawBody []byte

// gzipBody is a request body sent as it is, as application/gzip: a task's archive.
type gzipBody []byte

// ExportURL is where a task's archive is downloaded (a link target in the browser);
// redact replaces secret-like strings in it.
func (c *Client) ExportURL(taskID string, redact bool) string {
	u := c.base + "/api/v1/tasks/" + url.PathEscape(taskID) + "/export"
	if redact {
		u += "?redact=1"
	}
	return u
}

// ExportTask fetches a task's archive (a tar.gz), redacted when asked.
func (c *Client) ExportTask(ctx context.Context, taskID string, redact bool) ([]byte, error) {
	var body []byte
	return body, c.call(ctx, "GET", strings.TrimPrefix(c.ExportURL(taskID, redact), c.base), nil, &body)
}

// ImportTask makes a new task of the account's from an archive that ExportTask fetched
// (at most shared.MaxImportBytes); its sessions are closed and nothing in it runs.
func (c *Client) ImportTask(ctx context.Context, archive []byte) (shared.Task, error) {
	var t shared.Task
	return t, c.call(ctx, "POST", "/api/v1/tasks/import", gzipBody(archive), &t)
}

// Cancel cancels the session's running turn.
func (c *Client) Cancel(ctx context.Context, sessionID string) error {
	return c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/cancel", struct{}{}, nil)
}

// StopAgent stops the session's agent while the session stays; its next prompt starts a
// new agent. It returns the session once the agent is gone.
func (c *Client) StopAgent(ctx context.Context, sessionID string) (shared.Session, error) {
	var s shared.Session
	return s, c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/stop", struct{}{}, &s)
}

// Resume starts a stopped session's agent, which takes the conversation up again, with
// no prompt. It returns the session once the agent has answered.
func (c *Client) Resume(ctx context.Context, sessionID string) (shared.Session, error) {
	var s shared.Session
	return s, c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/resume", struct{}{}, &s)
}

// Fork is "Fork from here" on an agent's reply: the new session, forked by the agent, or
// with a draft first prompt that summarizes the conversation up to the reply.
func (c *Client) Fork(ctx context.Context, sessionID, messageID string) (shared.Fork, error) {
	var f shared.Fork
	return f, c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/messages/"+url.PathEscape(messageID)+"/fork", struct{}{}, &f)
}

// SetMode switches the session's agent to one of the modes it offers.
func (c *Client) SetMode(ctx context.Context, sessionID, modeID string) (shared.Session, error) {
	var s shared.Session
	return s, c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/mode", shared.ModeRequest{ModeID: modeID}, &s)
}

// SetConfig sets one of the config options the session's agent offers: a select to one
// of its values (a string), a boolean on or off.
func (c *Client) SetConfig(ctx context.Context, sessionID, configID string, value any) (shared.Session, error) {
	var s shared.Session
	return s, c.call(ctx, "POST", "/api/v1/task-sessions/"+url.PathEscape(sessionID)+"/config", shared.ConfigRequest{ConfigID: configID, Value: value}, &s)
}

// AnswerPermission answers a pending permission request with one of the options it
// offers and returns the updated message.
func (c *Client) AnswerPermission(ctx context.Context, sessionID, messageID, optionID string) (shared.Message, error) {
	var m shared.Message
	path := "/api/v1/task-sessions/" + url.PathEscape(sessionID) + "/permissions/" + url.PathEscape(messageID)
	return m, c.call(ctx, "POST", path, shared.PermissionAnswer{OptionID: optionID}, &m)
}

// AnswerElicitation answers an agent's pending question (accept with the form's content,
// decline or cancel) and returns the updated message.
func (c *Client) AnswerElicitation(ctx context.Context, sessionID, messageID string, a shared.ElicitationAnswer) (shared.Message, error) {
	var m shared.Message
	path := "/api/v1/task-sessions/" + url.PathEscape(sessionID) + "/elicitations/" + url.PathEscape(messageID)
	return m, c.call(ctx, "POST", path, shared.ElicitationAnswer{Action: a.Action, Content: a.Content}, &m)
}

// ShellOutput fetches the whole stored output of one shell command.
func (c *Client) ShellOutput(ctx context.Context, sessionID, messageID string) (shared.ShellOutputSnapshot, error) {
	s, _, _, err := c.ShellOutputIfChanged(ctx, sessionID, messageID, "", nil)
	return s, err
}

// ShellOutputIfChanged fetches the output of one shell command unless it is still the
// version etag (an ETag this method returned): then the server answers 304 with no body,
// and notModified is true with a zero snapshot. With etag "" it always fetches. With
// from, the answer may hold only what came after those offsets (snap.Append true; see
// shared.ShellOutputSnapshot.Extend).
func (c *Client) ShellOutputIfChanged(ctx context.Context, sessionID, messageID, etag string, from *shared.Offsets) (snap shared.ShellOutputSnapshot, tag string, notModified bool, err error) {
	path := shellOutputPath(sessionID, messageID)
	if from != nil {
		path += "?stdout_offset=" + strconv.FormatInt(from.Stdout, 10) + "&stderr_offset=" + strconv.FormatInt(from.Stderr, 10)
	}
	v := version{etag: etag}
	err = c.callIfNoneMatch(ctx, "GET", path, &v, nil, &snap)
	if errors.Is(err, errNotModified) {
		return snap, etag, true, nil
	}
	snap.Offline = v.offline
	return snap, v.etag, false, err
}

// answerError is the error a non-2xx answer reports (a *shared.Error, or a
// *shared.Conflict when it names files), nil for a 2xx one.
func answerError(status int, body []byte) error {
	if status >= 200 && status <= 299 {
		return nil
	}
	var e shared.ErrorBody
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		e.Error = strings.TrimSpace(string(body))
	}
	err := &shared.Error{Code: e.Code, Message: e.Error}
	if len(e.Paths) > 0 {
		return &shared.Conflict{Err: err, Paths: e.Paths}
	}
	return err
}

// ShellOutputRawURL is where one stream ("stdout" or "stderr") of a command's stored
// output is downloaded as a text file, byte for byte (a link target in the browser).
func (c *Client) ShellOutputRawURL(sessionID, messageID, stream string) string {
	return c.base + rawPath(sessionID, messageID, stream)
}

// ShellOutputRaw downloads one stream of a command's stored output, byte for byte.
func (c *Client) ShellOutputRaw(ctx context.Context, sessionID, messageID, stream string) (string, error) {
	var body []byte
	err := c.call(ctx, "GET", rawPath(sessionID, messageID, stream), nil, &body)
	return string(body), err
}

// messagePath is the path of one message of a session, under which its bodies are served.
func messagePath(sessionID, messageID string) string {
	return "/api/v1/task-sessions/" + url.PathEscape(sessionID) + "/messages/" + url.PathEscape(messageID)
}

func shellOutputPath(sessionID, messageID string) string {
	return messagePath(sessionID, messageID) + "/shell-output"
}

func rawPath(sessionID, messageID, stream string) string {
	return shellOutputPath(sessionID, messageID) + "/raw?stream=" + url.QueryEscape(stream)
}

// ToolContent fetches the diff and text content of a tool call that is not a shell command.
func (c *Client) ToolContent(ctx context.Context, sessionID, messageID string) (shared.ToolContentSnapshot, error) {
	var snap shared.ToolContentSnapshot
	var v version
	path := messagePath(sessionID, messageID) + "/tool-content"
	err := c.callIfNoneMatch(ctx, "GET", path, &v, nil, &snap)
	snap.Offline = v.offline
	return snap, err
}

// ErrorDetail fetches the whole text of an error message, of which messages carry the
// headline (GET .../error-detail).
func (c *Client) ErrorDetail(ctx context.Context, sessionID, messageID string) (shared.ErrorDetail, error) {
	var d shared.ErrorDetail
	err := c.call(ctx, "GET", messagePath(sessionID, messageID)+"/error-detail", nil, &d)
	return d, err
}

// call sends in as JSON (when not nil; a rawBody as it is) and decodes a 2xx answer into out (when not nil;
// a *[]byte takes the body as it is).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	return c.callIfNoneMatch(ctx, method, path, nil, in, out)
}

// answer is what a round trip brought back.
type answer struct {
	status  int
	etag    string
	offline bool // the service worker's kept copy (shared.OfflineHeader)
	body    []byte
}

// version is the version of a resource a caller holds, and what an answer says of its own.
type version struct {
	etag    string // sent as If-None-Match (unless ""); the answer's ETag after the call
	offline bool   // after the call: the answer is the service worker's kept copy
}

// callIfNoneMatch is call made conditional by v, when not nil: it sends If-None-Match:
// v.etag (unless "") and sets v from the answer. A 304 answer to an If-None-Match returns
// errNotModified and decodes nothing.
func (c *Client) callIfNoneMatch(ctx context.Context, method, path string, v *version, in, out any) error {
	var held string
	if v != nil {
		held = v.etag
	}
	var body []byte
	contentType := "application/json"
	switch in := in.(type) {
	case nil:
	case rawBody:
		body, contentType = in, "application/octet-stream"
	case gzipBody:
		body, contentType = in, "application/gzip"
	default:
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	a, err := c.roundTrip(ctx, method, c.base+path, held, contentType, body)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%s %s: %w: %v", method, path, ErrUnreachable, err)
	}
	if v != nil {
		v.etag, v.offline = a.etag, a.offline
	}
	if a.status == 304 && held != "" {
		return errNotModified
	}
	if e := answerError(a.status, a.body); e != nil {
		return fmt.Errorf("%s %s: %d: %w", method, path, a.status, e)
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = a.body
		return nil
	}
	if err := json.NewDecoder(bytes.NewReader(a.body)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// GetTask reads one task.
func (c *Client) GetTask(ctx context.Context, id string) (shared.Task, error) {
	var t shared.Task
	return t, c.call(ctx, "GET", "/api/v1/tasks/"+url.PathEscape(id), nil, &t)
}

// Changes summarizes what a task on a repository changed (no diff bodies).
func (c *Client) Changes(ctx context.Context, taskID string) (shared.Changes, error) {
	var ch shared.Changes
	return ch, c.call(ctx, "GET", "/api/v1/tasks/"+url.PathEscape(taskID)+"/changes", nil, &ch)
}

// ChangeDiff fetches one changed file's texts (path as the summary lists it).
func (c *Client) ChangeDiff(ctx context.Context, taskID, path string) (shared.FileDiff, error) {
	var d shared.FileDiff
	return d, c.call(ctx, "GET", "/api/v1/tasks/"+url.PathEscape(taskID)+"/changes/diff?path="+url.QueryEscape(path), nil, &d)
}

// Commit commits all of a task's uncommitted work on its branch, and returns its changes.
func (c *Client) Commit(ctx context.Context, taskID, message string) (shared.Changes, error) {
	return c.land(ctx, taskID, "commit", map[string]string{"message": message})
}

// Merge brings a task's branch onto its base branch locally, by mode "merge" or "rebase".
// A conflict is a *shared.Conflict naming the files (shared.ConflictPaths); it changed nothing.
func (c *Client) Merge(ctx context.Context, taskID, mode string) (shared.Changes, error) {
	return c.land(ctx, taskID, "merge", map[string]string{"mode": mode})
}

// Push pushes a task's branch to its repository's remote origin.
func (c *Client) Push(ctx context.Context, taskID string) (shared.Changes, error) {
	return c.land(ctx, taskID, "push", nil)
}

// Review sends comments on lines of a task's change to its newest session as one prompt,
// and returns that prompt's stored message.
func (c *Client) Review(ctx context.Context, taskID string, comments []shared.ReviewComment) (shared.Message, error) {
	var m shared.Message
	return m, c.call(ctx, "POST", "/api/v1/tasks/"+url.PathEscape(taskID)+"/review", shared.Review{Comments: comments}, &m)
}

// land posts one step of landing a task (POST /api/v1/tasks/{id}/STEP).
func (c *Client) land(ctx context.Context, taskID, step string, in any) (shared.Changes, error) {
	var ch shared.Changes
	return ch, c.call(ctx, "POST", "/api/v1/tasks/"+url.PathEscape(taskID)+"/"+step, in, &ch)
}
