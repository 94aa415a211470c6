package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/gofiber/fiber/v2"
	sqlite3 "github.com/mattn/go-sqlite3"

	"conch/server/internal/pgtest"
	"conch/shared"
)

// fullBody is the answer to a write the server had no room for.
var fullBody, _ = json.Marshal(shared.ErrorBody{Code: shared.CodeInsufficientStorage,
	Error: "the server's storage is full: nothing more can be stored until its operator makes room"})

// TestStorageFullIs507: the error mapper answers a failure for want of room (the file
// system's ENOSPC, SQLite's SQLITE_FULL), however deeply wrapped, with 507
// insufficient_storage and logs its cause; an I/O error stays a 500.
func TestStorageFullIs507(t *testing.T) {
	for _, c := range []struct {
		name, cause string
		err         error
		status      int
		body        string
	}{
		{"ENOSPC", "no space left on device",
			fmt.Errorf("create session: %w", &fs.PathError{Op: "mkdir", Path: "/data/s", Err: syscall.ENOSPC}),
			http.StatusInsufficientStorage, string(fullBody)},
		{"SQLITE_FULL", "database or disk is full",
			fmt.Errorf("add message: %w", fmt.Errorf("store output: %w", sqlite3.Error{Code: sqlite3.ErrFull})),
			http.StatusInsufficientStorage, string(fullBody)},
		{"EIO", "input/output error",
			fmt.Errorf("add message: %w", syscall.EIO),
			http.StatusInternalServerError, `{"error":"request failed","code":"internal"}`},
	} {
		logs := &lockedWriter{}
		s := &server{log: slog.New(slog.NewTextHandler(logs, nil))}
		app := fiber.New()
		app.Post("/", func(ctx *fiber.Ctx) error { return s.fail(ctx, c.err) })
		resp, err := app.Test(httptest.NewRequest("POST", "/", nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || string(body) != c.body {
			t.Errorf("%s: %d %s, want %d %s", c.name, resp.StatusCode, body, c.status, c.body)
		}
		if !strings.Contains(logs.String(), c.cause) {
			t.Errorf("%s: the cause is not in the log: %s", c.name, logs.String())
		}
	}
}

// TestFullDatabaseIs507: when the real SQLite file has no room, a write through the API
// answers 507 insufficient_storage; once there is room again, it succeeds.
func TestFullDatabaseIs507(t *testing.T) {
	pgtest.SQLiteOnly(t, "PRAGMA max_page_count makes the disk full")
	e := newEnv(t)
	ctx := context.Background()
	if err := e.store.LimitGrowth(ctx, 0); err != nil {
		t.Fatal(err)
	}
	task := fmt.Sprintf(`{"title":"full","description":%q}`, strings.Repeat("x", 60<<10))
	if body := e.expect(http.StatusInsufficientStorage, "POST", "/api/v1/tasks", task, nil); body != string(fullBody) {
		t.Errorf("full: %s, want %s", body, fullBody)
	}
	if err := e.store.LimitGrowth(ctx, -1); err != nil {
		t.Fatal(err)
	}
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", task, nil)
}

// TestStorageLimitIs507: past the storage limit (--max-storage) an upload answers 507
// insufficient_storage, saying which limit; a file that still fits is stored.
func TestStorageLimitIs507(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	ctx := context.Background()
	if _, err := e.store.SetPromptCapabilities(ctx, sess.ID, shared.PromptCapabilities{EmbeddedContext: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.LimitStorage(ctx, 4<<10); err != nil {
		t.Fatal(err)
	}
	e.upload(http.StatusCreated, sess.ID, "a.txt", "text/plain", strings.Repeat("a", 3<<10), nil)
	body := e.upload(http.StatusInsufficientStorage, sess.ID, "b.txt", "text/plain", strings.Repeat("b", 2<<10), nil)
	if want := `{"error":"this server's storage limit (4 KiB of command output and files) is reached: delete tasks to make room","code":"insufficient_storage"}`; body != want {
		t.Errorf("past the limit: %s, want %s", body, want)
	}
	e.upload(http.StatusCreated, sess.ID, "c.txt", "text/plain", strings.Repeat("c", 1<<10), nil)
}
