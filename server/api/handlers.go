package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"conch/server/store"
	taskpkg "conch/server/task"
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

func (s *server) handleHealth(c *fiber.Ctx) error {
	if err := s.store.Ping(c.UserContext()); err != nil {
		s.log.Error("health: store does not answer", "err", err)
		return sendJSON(c.Status(http.StatusServiceUnavailable), fiber.Map{"status": "unavailable", "error": "store unavailable"})
	}
	// Writes that fail (a full disk) leave commands and sessions unrecorded until they
	// succeed again: not healthy, and why.
	if err := s.rt.Draining(); err != nil { // a balancer stops sending requests here
		return sendJSON(c.Status(http.StatusServiceUnavailable), fiber.Map{"status": "draining", "error": shared.ErrorMessage(err)})
	}
	if err := s.store.WriteHealth(); err != nil {
		return sendJSON(c.Status(http.StatusServiceUnavailable), fiber.Map{"status": "unavailable", "error": err.Error()})
	}
	health := fiber.Map{"status": "ok"}
	if s.sandbox != "" {
		health["sandbox"] = s.sandbox
	}
	return sendJSON(c, health)
}

func (s *server) handleListAgents(c *fiber.Ctx) error {
	agents := s.rt.Agents()
	if agents == nil {
		agents = []shared.Agent{}
	}
	return sendJSON(c, fiber.Map{"agents": agents})
}

func (s *server) handleListTasks(c *fiber.Ctx) error {
	tasks, err := s.store.ListTasks(c.UserContext())
	if err == nil {
		tasks, err = s.tasks.SeenBy(c.UserContext(), accountFrom(c.UserContext()), tasks)
	}
	if err != nil {
		return s.fail(c, err)
	}
	if tasks == nil {
		tasks = []shared.Task{}
	}
	return sendJSON(c, fiber.Map{"tasks": tasks})
}

type createTaskRequest struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Repo        string   `json:"repo"`
	BaseBranch  string   `json:"base_branch"`
	Directories []string `json:"additional_directories"`
}

func (s *server) handleCreateTask(c *fiber.Ctx) error {
	var req createTaskRequest
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	repo, base, err := checkRepo(c.UserContext(), req.Repo, req.BaseBranch)
	if err != nil {
		return s.fail(c, err)
	}
	dirs, err := checkDirectories(req.Directories)
	if err != nil {
		return s.fail(c, err)
	}
	task, err := s.store.CreateTaskOn(c.UserContext(), req.Title, req.Description, repo, base, taskpkg.Person(accountFrom(c.UserContext())), dirs...)
	if err != nil {
		return s.fail(c, err)
	}
	s.events.TaskChanged(task.ID)
	c.Locals(madeTaskKey, task.ID)
	task.MayEdit, task.MayShare = true, taskpkg.MayShare(accountFrom(c.UserContext()), task) // its maker's
	return sendJSON(c.Status(http.StatusCreated), task)
}

func (s *server) handleGetTask(c *fiber.Ctx) error {
	task, err := s.store.GetTask(c.UserContext(), c.Params("task_id"))
	tasks := []shared.Task{task}
	if err == nil {
		tasks, err = s.tasks.SeenBy(c.UserContext(), accountFrom(c.UserContext()), tasks)
	}
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, tasks[0])
}

// handleDeleteTask stops the task's agents, then removes the task with everything it holds
// in one transaction, and tells the sessions' subscribers.
func (s *server) handleDeleteTask(c *fiber.Ctx) error {
	ctx, id := c.UserContext(), c.Params("task_id")
	task, err := s.store.GetTask(ctx, id)
	if err != nil {
		return s.fail(c, err)
	}
	live, err := s.store.TaskSessions(ctx, id)
	if err != nil {
		return s.fail(c, err)
	}
	const reason = "its task was deleted"
	var homes []string         // the sessions' private homes (shared.Sandbox), removed with the task
	for _, sid := range live { // first, so that no agent writes into what is being deleted
		s.rt.Stop(sid, reason)
		if sess, err := s.store.GetSession(ctx, sid); err == nil && sess.Sandbox != nil && sess.Sandbox.Home != "" {
			homes = append(homes, sess.Sandbox.Home)
		}
	}
	deleted, err := s.store.DeleteTask(ctx, id)
	if err != nil {
		return s.fail(c, err)
	}
	for _, sid := range deleted {
		if !slices.Contains(live, sid) { // started in between
			s.rt.Stop(sid, reason)
		}
		s.events.SessionDeleted(sid)
	}
	s.removeWorktree(task)
	for _, home := range homes {
		// <data>/sandboxes/<session id>/home: the session's directory goes, its home and TMPDIR.
		if dir := filepath.Dir(home); filepath.Base(filepath.Dir(dir)) == "sandboxes" {
			if err := os.RemoveAll(dir); err != nil {
				s.log.Warn("remove a deleted session's sandbox home", "dir", dir, "err", err)
			}
		}
	}
	s.events.TaskDeleted(id)
	return c.SendStatus(http.StatusNoContent)
}

type createSessionRequest struct {
	Agent string `json:"agent"`
	Cwd   string `json:"cwd"`
}

func (s *server) handleCreateSession(c *fiber.Ctx) error {
	var req createSessionRequest
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	if strings.TrimSpace(req.Agent) == "" {
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "agent is required"))
	}
	ctx := c.UserContext()
	task, err := s.store.GetTask(ctx, c.Params("task_id"))
	if err != nil {
		return s.fail(c, err)
	}
	cwd, made := req.Cwd, ""
	if task.Repo != "" {
		if cwd != "" {
			return s.fail(c, shared.Errorf(shared.CodeInvalid, "a task on a repository runs its sessions in its own worktree: leave cwd out"))
		}
		if task, made, err = s.ensureWorktree(ctx, task); err != nil {
			return s.fail(c, err)
		}
		cwd = task.Worktree
	} else if cwd != "" {
		if cwd, err = checkDirectory("cwd", cwd); err != nil {
			return s.fail(c, err)
		}
	}
	// A session that failed to start is still created: 201 with state failed and its error.
	sess, err := s.rt.StartSession(ctx, task.ID, req.Agent, cwd)
	if err != nil {
		return s.fail(c, err)
	}
	if made != "" {
		s.addStatus(ctx, sess.ID, made)
	}
	return sendJSON(c.Status(http.StatusCreated), sess)
}

func (s *server) handleGetSession(c *fiber.Ctx) error {
	sess, err := s.store.GetSession(c.UserContext(), c.Params("session_id"))
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, sess)
}

func (s *server) handleGetMessage(c *fiber.Ctx) error {
	msg, err := s.store.GetMessage(c.UserContext(), c.Params("message_id"))
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, msg)
}

func (s *server) handleListMessages(c *fiber.Ctx) error {
	query := url.Values{}
	for k, v := range c.Queries() {
		query.Set(k, v)
	}
	q, err := shared.ParseListQuery(c.Params("session_id"), query)
	if err != nil {
		return s.fail(c, err)
	}
	page, err := s.store.ListMessages(c.UserContext(), q)
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, page)
}

func (s *server) handleAddMessage(c *fiber.Ctx) error {
	var req shared.AddRequest
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	if err := fromPath(c, pathID{"session_id", &req.SessionID}); err != nil {
		return s.fail(c, err)
	}
	msg, err := s.addMessage(c.UserContext(), req.SessionID, req)
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c.Status(http.StatusAccepted), msg)
}

// addMessage is message.add over REST and WebSocket alike: the runtime stores the prompt,
// publishes it and queues the turn (with files as resource links: a review). A repeated
// client_message_id returns the first message and starts nothing. A prompt may be files
// alone (a pasted screenshot), never nothing.
func (s *server) addMessage(ctx context.Context, sessionID string, req shared.AddRequest, files ...string) (shared.Message, error) {
	if strings.TrimSpace(req.Content) == "" && len(req.Attachments) == 0 {
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "content is required")
	}
	if err := shared.CheckLength("content", req.Content, shared.MaxPromptBytes); err != nil {
		return shared.Message{}, err
	}
	return s.rt.Prompt(ctx, sessionID, taskpkg.Person(accountFrom(ctx)).Login, req, files...)
}

func (s *server) handleCancel(c *fiber.Ctx) error {
	sessionID := c.Params("session_id")
	sess, err := s.store.GetSession(c.UserContext(), sessionID)
	if err != nil {
		return s.fail(c, err)
	}
	if err := s.rt.Cancel(sessionID); err != nil {
		return s.fail(c, err)
	}
	// The turn ends asynchronously (ACP session/cancel is a notification).
	return sendJSON(c.Status(http.StatusAccepted), sess)
}

// handleStop stops the session's agent; the session stays for the next prompt.
func (s *server) handleStop(c *fiber.Ctx) error {
	sess, err := s.rt.StopAgent(c.UserContext(), c.Params("session_id"))
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, sess)
}

// handleUsage sums the cost the agents reported, per day and per task.
func (s *server) handleUsage(c *fiber.Ctx) error {
	r, err := s.store.UsageReport(c.UserContext(), c.Query("from"), c.Query("to"))
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, r)
}

// handleResume starts a stopped session's agent, which resumes the conversation.
func (s *server) handleResume(c *fiber.Ctx) error {
	sess, err := s.rt.Resume(c.UserContext(), c.Params("session_id"))
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, sess)
}

func (s *server) handleAnswerPermission(c *fiber.Ctx) error {
	var req shared.PermissionAnswer
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	if err := fromPath(c, pathID{"session_id", &req.SessionID}, pathID{"message_id", &req.MessageID}); err != nil {
		return s.fail(c, err)
	}
	msg, err := s.answerPermission(c.UserContext(), req)
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, msg)
}

// answerPermission is permission.answer over REST and WebSocket alike; the runtime
// stores the answer, publishes it and hands it to the agent.
func (s *server) answerPermission(ctx context.Context, req shared.PermissionAnswer) (shared.Message, error) {
	switch {
	case strings.TrimSpace(req.MessageID) == "":
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "message_id is required")
	case strings.TrimSpace(req.OptionID) == "":
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "option_id is required")
	}
	return s.rt.AnswerPermission(store.AnsweredBy(ctx, taskpkg.Person(accountFrom(ctx)).Login), req.SessionID, req.MessageID, req.OptionID)
}

func (s *server) handleAnswerElicitation(c *fiber.Ctx) error {
	var req shared.ElicitationAnswer
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	if err := fromPath(c, pathID{"session_id", &req.SessionID}, pathID{"message_id", &req.MessageID}); err != nil {
		return s.fail(c, err)
	}
	msg, err := s.answerElicitation(c.UserContext(), req)
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, msg)
}

// answerElicitation is elicitation.answer over REST and WebSocket alike; the store checks
// the answer against the question's fields.
func (s *server) answerElicitation(ctx context.Context, req shared.ElicitationAnswer) (shared.Message, error) {
	if strings.TrimSpace(req.MessageID) == "" {
		return shared.Message{}, shared.Errorf(shared.CodeInvalid, "message_id is required")
	}
	return s.rt.AnswerElicitation(store.AnsweredBy(ctx, taskpkg.Person(accountFrom(ctx)).Login), req.SessionID, req.MessageID, req)
}

func (s *server) handleSetMode(c *fiber.Ctx) error {
	return askAgent(s, c, func(r *shared.ModeRequest) *string { return &r.SessionID }, s.setMode)
}

// askAgent answers a request of body T for the agent of the session in the path (T's
// session id, named by id) with the session that ask returns.
func askAgent[T any](s *server, c *fiber.Ctx, id func(*T) *string, ask func(context.Context, T) (shared.Session, error)) error {
	var req T
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	if err := fromPath(c, pathID{"session_id", id(&req)}); err != nil {
		return s.fail(c, err)
	}
	sess, err := ask(c.UserContext(), req)
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c, sess)
}

// setMode is session.set_mode over REST and WebSocket alike.
func (s *server) setMode(ctx context.Context, req shared.ModeRequest) (shared.Session, error) {
	if strings.TrimSpace(req.ModeID) == "" {
		return shared.Session{}, shared.Errorf(shared.CodeInvalid, "mode_id is required")
	}
	return s.rt.SetMode(ctx, req.SessionID, req.ModeID)
}

func (s *server) handleSetConfig(c *fiber.Ctx) error {
	return askAgent(s, c, func(r *shared.ConfigRequest) *string { return &r.SessionID }, s.setConfig)
}

// setConfig is session.set_config over REST and WebSocket alike.
func (s *server) setConfig(ctx context.Context, req shared.ConfigRequest) (shared.Session, error) {
	if err := req.Check(); err != nil {
		return shared.Session{}, err
	}
	return s.rt.SetConfig(ctx, req.SessionID, req)
}

// decodeBody decodes one strict JSON object (see the package comment) into v.
func decodeBody(body []byte, v any) error {
	if !utf8.Valid(body) {
		return shared.Errorf(shared.CodeInvalid, "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return shared.Errorf(shared.CodeInvalid, "%s", describeJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return shared.Errorf(shared.CodeInvalid, "request body must hold exactly one JSON object")
	}
	return checkKeys(body, reflect.TypeOf(v))
}

func describeJSONError(err error) string {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		return "request body is empty"
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at byte %d", syn.Offset)
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Sprintf("field %q must be %s", wireField(typ.Field), jsonKind(typ.Type))
	case errors.As(err, &typ):
		return "request body must be a JSON object"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "malformed JSON: unexpected end of body"
	default: // unknown field and the like: the decoder's text names the field
		return strings.TrimPrefix(err.Error(), "json: ")
	}
}

// wireField is a decoding error's field path as the client wrote it: without the Go names
// of embedded structs (capitalized, unlike every JSON name of the API).
func wireField(path string) string {
	parts := strings.Split(path, ".")
	for len(parts) > 1 && parts[0] != "" && unicode.IsUpper(rune(parts[0][0])) {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	default:
		return "an object"
	}
}

// pathID is an id a request body may repeat from its path: the route parameter's name
// (the body's field has the same) and the body's value.
type pathID struct {
	name string
	id   *string
}

// fromPath gives each id of a body the path's value: one the body leaves out is taken
// from the path, one that names something else is refused.
func fromPath(c *fiber.Ctx, ids ...pathID) error {
	for _, p := range ids {
		if path := c.Params(p.name); *p.id != "" && *p.id != path {
			return shared.Errorf(shared.CodeInvalid, "%s does not match the path", p.name)
		}
	}
	for _, p := range ids {
		*p.id = c.Params(p.name)
	}
	return nil
}
