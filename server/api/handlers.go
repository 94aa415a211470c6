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
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"conch/server/task"
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
	tasks, err := s.tasks.ListTasks(c.UserContext(), accountFrom(c.UserContext()))
	if tasks == nil {
		tasks = []shared.Task{}
	}
	return s.answer(c, http.StatusOK, fiber.Map{"tasks": tasks}, err)
}

func (s *server) handleCreateTask(c *fiber.Ctx) error {
	var req task.NewTask
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	t, err := s.tasks.CreateTask(c.UserContext(), accountFrom(c.UserContext()), req)
	if err == nil {
		c.Locals(madeTaskKey, t.ID)
	}
	return s.answer(c, http.StatusCreated, t, err)
}

func (s *server) handleGetTask(c *fiber.Ctx) error {
	t, err := s.tasks.GetTask(c.UserContext(), accountFrom(c.UserContext()), c.Params("task_id"))
	return s.answer(c, http.StatusOK, t, err)
}

func (s *server) handleDeleteTask(c *fiber.Ctx) error {
	if err := s.tasks.DeleteTask(c.UserContext(), c.Params("task_id")); err != nil {
		return s.fail(c, err)
	}
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
	// A session that failed to start is still created: 201 with state failed and its error.
	sess, err := s.tasks.CreateSession(c.UserContext(), c.Params("task_id"), req.Agent, req.Cwd)
	return s.answer(c, http.StatusCreated, sess, err)
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
	msg, err := s.tasks.Prompt(c.UserContext(), accountFrom(c.UserContext()), req.SessionID, req)
	return s.answer(c, http.StatusAccepted, msg, err)
}

func (s *server) handleCancel(c *fiber.Ctx) error {
	sess, err := s.tasks.Cancel(c.UserContext(), c.Params("session_id"))
	return s.answer(c, http.StatusAccepted, sess, err) // the turn ends later
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

func (s *server) handleFork(c *fiber.Ctx) error {
	f, err := s.tasks.Fork(c.UserContext(), strings.Clone(c.Params("session_id")), strings.Clone(c.Params("message_id")))
	return s.answer(c, http.StatusCreated, f, err)
}

func (s *server) handleAnswerPermission(c *fiber.Ctx) error {
	return askAgent(s, c, func(r *shared.PermissionAnswer) []pathID {
		return []pathID{{"session_id", &r.SessionID}, {"message_id", &r.MessageID}}
	},
		func(ctx context.Context, req shared.PermissionAnswer) (shared.Message, error) {
			return s.tasks.AnswerPermission(ctx, accountFrom(ctx), req)
		})
}

func (s *server) handleAnswerElicitation(c *fiber.Ctx) error {
	return askAgent(s, c, func(r *shared.ElicitationAnswer) []pathID {
		return []pathID{{"session_id", &r.SessionID}, {"message_id", &r.MessageID}}
	},
		func(ctx context.Context, req shared.ElicitationAnswer) (shared.Message, error) {
			return s.tasks.AnswerElicitation(ctx, accountFrom(ctx), req)
		})
}

func (s *server) handleSetMode(c *fiber.Ctx) error {
	return askAgent(s, c, func(r *shared.ModeRequest) []pathID { return []pathID{{"session_id", &r.SessionID}} }, s.tasks.SetMode)
}

func (s *server) handleSetConfig(c *fiber.Ctx) error {
	return askAgent(s, c, func(r *shared.ConfigRequest) []pathID { return []pathID{{"session_id", &r.SessionID}} }, s.tasks.SetConfig)
}

// askAgent answers a request of body T for the agent of the session in the path (and its
// message: ids, T's ids that the path names too) with what ask returns.
func askAgent[T, A any](s *server, c *fiber.Ctx, ids func(*T) []pathID, ask func(context.Context, T) (A, error)) error {
	var req T
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	if err := fromPath(c, ids(&req)...); err != nil {
		return s.fail(c, err)
	}
	v, err := ask(c.UserContext(), req)
	return s.answer(c, http.StatusOK, v, err)
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
