package store

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"conch/server/internal/clocktest"
	"conch/server/internal/pgtest"
	"conch/shared"
)

// Usage reports: the latest is the session's; what the cost grew by adds up per day and
// per task (a cost that fell counts whole: a new agent counting afresh); a hostile report
// is refused and changes nothing; GET /api/v1/usage's days are checked; costs go with
// their task.
func TestSessionUsage(t *testing.T) {
	ctx := context.Background()
	c := clocktest.New(time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC), 0)
	s, err := Open(pgtest.DSN(t), c.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	at := func(day int) {
		c.Advance(time.Date(2026, 12, day, 12, 0, 0, 0, time.UTC).Sub(c.Now())) // the clock does not step
	}
	report := func(id string, used int64, amount float64) shared.Session {
		t.Helper()
		sess, err := s.SetSessionUsage(ctx, id, shared.Usage{ContextUsed: used, ContextSize: 1000, Cost: &shared.Cost{Amount: amount, Currency: "USD"}})
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	a, b := newSession(t, s), newSession(t, s)
	at(2)
	report(a.ID, 100, 0.5)
	report(a.ID, 200, 1.25) // +0.75
	at(3)
	report(a.ID, 300, 2) // +0.75
	report(b.ID, 10, 3)
	got := report(b.ID, 20, 1) // fell: a new agent, +1
	if got.Usage == nil || got.Usage.ContextUsed != 20 || *got.Usage.Cost != (shared.Cost{Amount: 1, Currency: "USD"}) {
		t.Errorf("the session's usage: %+v", got.Usage)
	}
	if _, err := s.SetSessionUsage(ctx, b.ID, shared.Usage{ContextUsed: 1}); err != nil {
		t.Errorf("a report without a cost: %v", err)
	}

	for _, bad := range []shared.Usage{
		{ContextUsed: -1},
		{ContextSize: MaxUsageTokens + 1},
		{Cost: &shared.Cost{Amount: -0.01, Currency: "USD"}},
		{Cost: &shared.Cost{Amount: math.NaN(), Currency: "USD"}},
		{Cost: &shared.Cost{Amount: math.Inf(1), Currency: "USD"}},
		{Cost: &shared.Cost{Amount: 1, Currency: "usd"}},
		{Cost: &shared.Cost{Amount: 1, Currency: "US\u202eD"}},
		{Cost: &shared.Cost{Amount: 1, Currency: ""}},
	} {
		if _, err := s.SetSessionUsage(ctx, a.ID, bad); shared.ErrorCode(err) != shared.CodeInvalid {
			t.Errorf("report %+v: %v", bad, err)
		}
	}
	if sess, _ := s.GetSession(ctx, a.ID); sess.Usage == nil || sess.Usage.ContextUsed != 300 || sess.Usage.Cost.Amount != 2 {
		t.Errorf("refused reports changed the session: %+v", sess.Usage)
	}

	usd := func(amount float64) []shared.Cost { return []shared.Cost{{Amount: amount, Currency: "USD"}} }
	r, err := s.UsageReport(ctx, "2026-12-01", "2026-12-03")
	if err != nil {
		t.Fatal(err)
	}
	want := shared.UsageReport{From: "2026-12-01", To: "2026-12-03",
		Days:  []shared.UsageDay{{Day: "2026-12-02", Cost: usd(1.25)}, {Day: "2026-12-03", Cost: usd(4.75)}},
		Tasks: []shared.UsageTask{{TaskID: a.TaskID, Title: "task", Cost: usd(2)}, {TaskID: b.TaskID, Title: "task", Cost: usd(4)}}}
	if want.Tasks[0].TaskID > want.Tasks[1].TaskID {
		want.Tasks[0], want.Tasks[1] = want.Tasks[1], want.Tasks[0]
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("report\n%+v, want\n%+v", r, want)
	}
	if r, err := s.UsageReport(ctx, "2026-12-03", ""); err != nil || r.To != "2026-12-03" || len(r.Days) != 1 {
		t.Errorf("from the 3rd to today: %+v %v", r, err)
	}
	if r, err := s.UsageReport(ctx, "", ""); err != nil || r.From != "2026-11-04" || r.To != "2026-12-03" {
		t.Errorf("the default days: %+v %v", r, err)
	}
	for _, q := range [][2]string{{"2026-12-04", "2026-12-03"}, {"yesterday", ""}, {"", "2026-13-01"}, {"2025-01-01", "2026-12-03"}} {
		if _, err := s.UsageReport(ctx, q[0], q[1]); shared.ErrorCode(err) != shared.CodeInvalid {
			t.Errorf("from %q to %q: %v", q[0], q[1], err)
		}
	}
	tasks, err := s.ListTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if w := map[string]float64{a.TaskID: 2, b.TaskID: 4}[task.ID]; !reflect.DeepEqual(task.Cost, usd(w)) || task.Sessions[0].Usage != nil {
			t.Errorf("task %s in the list: cost %+v, session usage %+v", task.ID, task.Cost, task.Sessions[0].Usage)
		}
	}
	if _, err := s.DeleteTask(ctx, b.TaskID); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.UsageReport(ctx, "2026-12-01", "2026-12-03"); len(r.Tasks) != 1 || !reflect.DeepEqual(r.Days[1].Cost, usd(0.75)) {
		t.Errorf("after deleting a task: %+v", r)
	}
}
