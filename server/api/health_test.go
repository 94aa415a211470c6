package api

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/server/store"
)

// TestHealthzSaysWhyWritesFail: while the real SQLite file is full, /healthz answers 503
// with the reason on every probe, also after writes that still fit (a full disk takes
// those); once there is room, 200 when writes have succeeded for a while (fake clock).
func TestHealthzSaysWhyWritesFail(t *testing.T) {
	pgtest.SQLiteOnly(t, "PRAGMA max_page_count makes the disk full")
	clk := clocktest.New(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC), time.Millisecond)
	st, err := store.Open(pgtest.DSN(t), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := newEnv(t, func(c *Config) { c.Store = st })
	ctx := context.Background()
	e.expect(http.StatusOK, "GET", "/healthz", "", nil)
	var deletable []string
	for range 8 {
		task, err := st.CreateTask(ctx, "to delete", strings.Repeat("x", 32<<10))
		if err != nil {
			t.Fatal(err)
		}
		deletable = append(deletable, task.ID)
	}
	if err := st.LimitGrowth(ctx, 4); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := st.CreateTask(ctx, "fill", strings.Repeat("x", 32<<10)); err != nil {
			break
		}
		if i == 1000 {
			t.Fatal("the store never filled up")
		}
	}
	full := regexp.MustCompile(`^\{"error":"store writes failing since 2026-12-02T15:00:\d\dZ: database or disk is full","status":"unavailable"\}$`)
	for probe := range 8 {
		if body := e.expect(http.StatusServiceUnavailable, "GET", "/healthz", "", nil); !full.MatchString(body) {
			t.Errorf("probe %d while full: %s", probe, body)
		}
		// A write that fits in the pages a deleted task left succeeds; the next big one fails.
		if _, err := st.DeleteTask(ctx, deletable[probe]); err != nil {
			t.Fatalf("a write that fits: %v", err)
		}
		if body := e.expect(http.StatusServiceUnavailable, "GET", "/healthz", "", nil); !full.MatchString(body) {
			t.Errorf("probe %d after a write that fit: %s", probe, body)
		}
		if _, err := st.CreateTask(ctx, "fill", strings.Repeat("x", 1<<20)); err == nil {
			t.Fatal("a write past the free pages succeeded")
		}
	}
	if err := st.LimitGrowth(ctx, -1); err != nil {
		t.Fatal(err)
	}
	e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"room again"}`, nil)
	clk.Advance(time.Minute)
	if body := e.expect(http.StatusOK, "GET", "/healthz", "", nil); body != `{"status":"ok"}` {
		t.Errorf("health after: %s", body)
	}
}
