package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"conch/server/hub"
	"conch/server/runner"
	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
)

// Runners (server/runner): the admin's routes of the route table, and the socket a
// runner connects through, let in by a runner token rather than an account.

func (s *server) handleListRunners(c *fiber.Ctx) error {
	runners, err := s.runners.List(c.UserContext())
	return s.answer(c, http.StatusOK, shared.RunnerList{Runners: runners}, err)
}

func (s *server) handleListRunnerTokens(c *fiber.Ctx) error {
	tokens, err := s.tasks.RunnerTokens(c.UserContext())
	return s.answer(c, http.StatusOK, struct {
		Tokens []shared.AccessToken `json:"tokens"`
	}{tokens}, err)
}

// handleCreateRunnerToken makes a runner token; its secret is in this answer only.
func (s *server) handleCreateRunnerToken(c *fiber.Ctx) error {
	var req shared.NewRunnerToken
	if err := decodeBody(c.Body(), &req); err != nil {
		return s.fail(c, err)
	}
	tok, err := s.tasks.CreateRunnerToken(c.UserContext(), req)
	return s.answer(c, http.StatusCreated, tok, err)
}

func (s *server) handleDeleteRunnerToken(c *fiber.Ctx) error {
	if err := s.tasks.DeleteRunnerToken(c.UserContext(), c.Params("token_id")); err != nil {
		return s.fail(c, err)
	}
	return c.SendStatus(http.StatusNoContent)
}

// runnerKey holds a runner's connection request, checked, in Fiber's locals.
const runnerKey = "conch.runner"

type runnerRequest struct {
	hello   runner.Hello
	tokenID string
	secret  string
}

// admitRunner checks a runner's connection before the upgrade: its token (401 when
// wrong or revoked, counted as any wrong token) and what it announces (400).
func (s *server) admitRunner(c *fiber.Ctx) error {
	secret, ok := bearerToken(c.Get(fiber.HeaderAuthorization))
	if !ok || !strings.HasPrefix(secret, task.RunnerTokenPrefix) {
		return s.refuseRunner(c, errUnauthorized)
	}
	id, err := s.tasks.RunnerToken(c.UserContext(), secret)
	if shared.ErrorCode(err) == shared.CodeUnauthorized {
		return s.refuseRunner(c, s.wrongToken(c, "runner"))
	}
	if err != nil {
		return s.fail(c, err)
	}
	capacity, err := strconv.Atoi(c.Query("capacity"))
	if err != nil {
		return s.fail(c, shared.Errorf(shared.CodeInvalid, "capacity must be a number of sessions"))
	}
	h := runner.Hello{Name: c.Query("name"), Capacity: capacity}
	if l := c.Query("labels"); l != "" {
		h.Labels = strings.Split(l, ",")
	}
	if err := shared.CheckRunner(h.Name, h.Labels, h.Capacity); err != nil {
		return s.fail(c, err)
	}
	c.Locals(runnerKey, runnerRequest{hello: h, tokenID: id, secret: secret})
	return c.Next()
}

func (s *server) refuseRunner(c *fiber.Ctx, err error) error {
	if shared.ErrorCode(err) == shared.CodeUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="conch runners"`)
	}
	return s.fail(c, err)
}

// runnerFrameLimit bounds a runner's WebSocket frames: yamux's are at most its stream
// window (256 KiB) and a header.
const runnerFrameLimit = 1 << 20

// handleRunner serves a runner's connection until it ends. It is registered in the hub
// under its token, so that revoking the token, on any server, ends it, as it does a
// person's WebSocket.
func (s *server) handleRunner(conn *websocket.Conn) {
	req := conn.Locals(runnerKey).(runnerRequest)
	client := s.hub.Connect(hub.Who{Keys: []string{task.RunnerRevokeKey(req.tokenID)}})
	defer client.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// A revocation between the upgrade's check and the registration reached no client.
	if _, err := s.tasks.RunnerToken(ctx, req.secret); err != nil {
		client.End(hub.ErrRevoked)
	}
	go func() {
		select {
		case <-client.Done():
			cancel(client.Err())
		case <-ctx.Done():
		}
	}()
	conn.SetReadLimit(runnerFrameLimit)
	err := s.runners.Serve(ctx, &frames{Conn: conn}, req.hello)
	s.log.Info("runner left", "runner", req.hello.Name, "why", err)
}

// frames is a WebSocket as a stream of bytes (net.Conn), each write one binary message,
// for yamux. yamux reads from one goroutine and writes from one, as the WebSocket needs.
type frames struct {
	*websocket.Conn
	r io.Reader // the message being read
}

func (f *frames) Read(p []byte) (int, error) {
	for {
		if f.r == nil {
			typ, r, err := f.NextReader()
			if err != nil {
				return 0, err
			}
			if typ != websocket.BinaryMessage {
				return 0, errors.New("runner: a text frame")
			}
			f.r = r
		}
		n, err := f.r.Read(p)
		if errors.Is(err, io.EOF) {
			f.r = nil
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

func (f *frames) Write(p []byte) (int, error) {
	if err := f.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *frames) SetDeadline(t time.Time) error {
	return errors.Join(f.SetReadDeadline(t), f.SetWriteDeadline(t))
}

// Close ends the reads and writes under way: fasthttp closes a hijacked connection only
// once the handler has returned, and yamux's Close waits for its reader first.
func (f *frames) Close() error {
	return errors.Join(f.SetDeadline(time.Now()), f.Conn.Close())
}
