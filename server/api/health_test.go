package api

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"conch/server/internal/pgtest"
)

// TestHealthzSaysWhyWritesFail: while the real SQLite file is full, /healthz answers 503
// with the reason; once a write succeeds again, 200.
func TestHealthzSaysWhyWritesFail(t *testing.T) {
	pgtest.SQLiteOnly(t, "PRAGMA max_page_count makes the disk full")
	e := newEnv(t)
	ctx := context.Background()
	e.expect(http.StatusOK, "GET", "/healthz", "", nil)
	if err := e.store.LimitGrowth(ctx, 4); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := e.store.CreateTask(ctx, "fill", strings.Repeat("x", 32<<10)); err != nil {
			break
		}
		if i == 1000 {
			t.Fatal("the store never filled up")
		}
	}
	body := e.expect(http.StatusServiceUnavailable, "GET", "/healthz", "", nil)
	if !regexp.MustCompile(`^\{"error":"store writes failing since 2026-12-02T15:00:\d\dZ: database or disk is full","status":"unavailable"\}$`).MatchString(body) {
		t.Errorf("health while full: %s", body)
	}
	if err := e.store.LimitGrowth(ctx, -1); err != nil {
		t.Fatal(err)
	}
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"room again"}`, nil)
	if body := e.expect(http.StatusOK, "GET", "/healthz", "", nil); body != `{"status":"ok"}` {
		t.Errorf("health after: %s", body)
	}
}
