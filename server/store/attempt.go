package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"conch/shared"

	"gorm.io/gorm"
)

// Attempts (shared.Attempt): a session of a task that runs in a worktree and branch of
// its own, with the check command run after each of its turns. The row says how its last
// check went and, once its turn ended, the size of its change then (computed by the task
// service with git, stored so that a list reads no repository for an attempt at rest).

type attemptRow struct {
	SessionID      string
	TaskID         string
	N              int
	Branch         string
	Worktree       string
	CheckCommand   string
	MaxRunning     int
	MaxCostMicros  int64
	Outcome        string
	Note           string
	CheckState     string
	CheckMessageID string
	CheckExit      *int
	CheckMillis    int64
	Checks         int
	ChecksFailed   int
	Files          int
	Added          int
	Removed        int
	StatsAt        int64 // the ended_at the stats were computed for; 0 for none
	CreatedAt      int64
	EndedAt        int64 // when its last turn (with its check) ended; 0 before
}

func (attemptRow) TableName() string { return "attempts" }

// AttemptRecord is an attempt as stored, with what only the server needs: its task, its
// worktree, its task's bounds, and whether its change's size is current.
type AttemptRecord struct {
	shared.Attempt
	TaskID       string
	Worktree     string
	CheckCommand string
	MaxRunning   int
	MaxCost      float64
	// StatsFresh says Files, Added and Removed were computed after its last turn ended:
	// they hold until it runs again.
	StatsFresh bool
	endedAt    int64
}

// NewAttempt is an attempt to record for a session that was just started.
type NewAttempt struct {
	SessionID, TaskID, Branch, Worktree, Check string
	N, MaxRunning                              int
	MaxCost                                    float64
}

// CreateAttempt records an attempt; its number must be free in its task.
func (s *Store) CreateAttempt(ctx context.Context, a NewAttempt) error {
	if err := errors.Join(shared.CheckText("branch", a.Branch), shared.CheckText("worktree", a.Worktree),
		shared.CheckText("check", a.Check)); err != nil {
		return err
	}
	row := attemptRow{SessionID: a.SessionID, TaskID: a.TaskID, N: a.N, Branch: a.Branch, Worktree: a.Worktree,
		CheckCommand: a.Check, MaxRunning: a.MaxRunning, MaxCostMicros: micros(a.MaxCost), CreatedAt: s.stamp()}
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		return fmt.Errorf("create attempt: %w", err)
	}
	return nil
}

// Attempts lists the task's attempts in their order, each with its session's state,
// usage and commands.
func (s *Store) Attempts(ctx context.Context, taskID string) ([]AttemptRecord, error) {
	return s.attempts(ctx, "task_id = ?", taskID)
}

// GetAttempt is the attempt of a session; CodeNotFound when it is none.
func (s *Store) GetAttempt(ctx context.Context, sessionID string) (AttemptRecord, error) {
	out, err := s.attempts(ctx, "session_id = ?", sessionID)
	if err == nil && len(out) == 0 {
		err = missing("attempt")
	}
	if err != nil {
		return AttemptRecord{}, err
	}
	return out[0], nil
}

// commandCount is how many shell commands a session ran, and how many failed.
type commandCount struct {
	SessionID string
	N, Failed int
}

func (s *Store) attempts(ctx context.Context, where string, arg string) ([]AttemptRecord, error) {
	db := s.db.WithContext(ctx)
	var rows []attemptRow
	if err := db.Where(where, arg).Order("n").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list attempts: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.SessionID
	}
	var sessions []sessionRow
	if err := db.Select("id", "agent", "state", "usage", "created_at").Where("id IN ?", ids).Find(&sessions).Error; err != nil {
		return nil, fmt.Errorf("list attempts' sessions: %w", err)
	}
	var counts []commandCount
	if err := db.Model(&messageRow{}).Select("session_id, COUNT(*) AS n, SUM(CASE WHEN status = ? THEN 1 ELSE 0 END) AS failed",
		string(shared.StatusFailed)).Where("session_id IN ? AND type = ?", ids, string(shared.TypeToolExecute)).
		Group("session_id").Scan(&counts).Error; err != nil {
		return nil, fmt.Errorf("count attempts' commands: %w", err)
	}
	bySession := map[string]sessionRow{}
	for _, r := range sessions {
		bySession[r.ID] = r
	}
	byCount := map[string]commandCount{}
	for _, c := range counts {
		byCount[c.SessionID] = c
	}
	now := s.now()
	out := make([]AttemptRecord, len(rows))
	for i, r := range rows {
		out[i] = r.record(bySession[r.SessionID], byCount[r.SessionID], now)
	}
	return out, nil
}

func (r attemptRow) record(sess sessionRow, c commandCount, now time.Time) AttemptRecord {
	a := shared.Attempt{SessionID: r.SessionID, N: r.N, Agent: sess.Agent, State: shared.SessionState(sess.State),
		Outcome: r.Outcome, Note: r.Note, Branch: r.Branch, Check: r.CheckState, CheckMessageID: r.CheckMessageID,
		CheckExit: r.CheckExit, CheckMillis: r.CheckMillis, Files: r.Files, Added: r.Added, Removed: r.Removed,
		Commands: max(c.N-r.Checks, 0), Failed: max(c.Failed-r.ChecksFailed, 0), CreatedAt: fromNanos(r.CreatedAt)}
	if u := sess.usage(); u != nil {
		a.Tokens, a.Cost = u.ContextUsed, u.Cost
	}
	end := now.UnixNano()
	if a.State != shared.SessionRunning && a.State != shared.SessionStarting && r.EndedAt != 0 {
		end = r.EndedAt
	}
	a.WallMillis = max(end-r.CreatedAt, 0) / int64(time.Millisecond)
	return AttemptRecord{Attempt: a, TaskID: r.TaskID, Worktree: r.Worktree, CheckCommand: r.CheckCommand, MaxRunning: r.MaxRunning,
		MaxCost: float64(r.MaxCostMicros) / microsPerUnit, StatsFresh: r.StatsAt != 0 && r.StatsAt == r.EndedAt,
		endedAt: r.EndedAt}
}

// AtRest says the attempt's turn ended and no other runs: what it changed holds until
// its next turn.
func (a AttemptRecord) AtRest() bool {
	return a.endedAt != 0 && a.State != shared.SessionRunning && a.State != shared.SessionStarting
}

// AttemptCheck is the check command of the session's attempt, and whether the session is
// an open attempt at all.
func (s *Store) AttemptCheck(ctx context.Context, sessionID string) (check string, open bool, err error) {
	var row attemptRow
	err = s.db.WithContext(ctx).Select("check_command", "outcome").Take(&row, "session_id = ?", sessionID).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("get attempt check: %w", err)
	}
	return row.CheckCommand, row.Outcome == shared.AttemptOpen, nil
}

// StartAttemptCheck records that the attempt's check runs as the stored command messageID.
func (s *Store) StartAttemptCheck(ctx context.Context, sessionID, messageID string) error {
	return s.updateAttempt(ctx, sessionID, map[string]any{"check_state": shared.CheckRunning,
		"check_message_id": messageID, "check_exit": nil, "check_millis": 0})
}

// EndAttemptTurn records the end of the attempt's turn, and how its check went when one
// ran (exit nil: it ended without an exit code, killed).
func (s *Store) EndAttemptTurn(ctx context.Context, sessionID string, checked bool, exit *int, took time.Duration) error {
	changes := map[string]any{"ended_at": s.stamp()}
	if checked {
		state := shared.CheckPassed
		if exit == nil || *exit != 0 {
			state = shared.CheckFailed
			changes["checks_failed"] = gorm.Expr("checks_failed + 1")
		}
		changes["check_state"], changes["check_exit"], changes["check_millis"] = state, exit, took.Milliseconds()
		changes["checks"] = gorm.Expr("checks + 1")
	}
	return s.updateAttempt(ctx, sessionID, changes)
}

// SetAttemptStats records the size of an attempt's change, computed after the end of
// the turn a (as read) recorded.
func (s *Store) SetAttemptStats(ctx context.Context, a AttemptRecord) error {
	return s.updateAttempt(ctx, a.SessionID, map[string]any{"files": a.Files, "added": a.Added,
		"removed": a.Removed, "stats_at": a.endedAt})
}

// EndAttempt gives an open attempt its outcome (kept, closed, stopped) and a note for
// people; it reports whether the attempt was open.
func (s *Store) EndAttempt(ctx context.Context, sessionID, outcome, note string) (bool, error) {
	res := s.db.WithContext(ctx).Model(&attemptRow{}).Where("session_id = ? AND outcome = ''", sessionID).
		Updates(map[string]any{"outcome": outcome, "note": CutText(storable(note), MaxTextBytes)})
	if res.Error != nil {
		return false, fmt.Errorf("end attempt: %w", res.Error)
	}
	return res.RowsAffected == 1, nil
}

// AttemptsCost is what the task's attempts cost together, per currency (their sessions'
// usage), and the least cost cap their requests set (0: none).
func (s *Store) AttemptsCost(ctx context.Context, taskID string) ([]shared.Cost, float64, error) {
	db := s.db.WithContext(ctx)
	var rows []costRow
	if err := db.Model(&usageDayRow{}).Select("task_id AS key, currency, SUM(micros) AS micros").
		Where("session_id IN (?)", db.Model(&attemptRow{}).Select("session_id").Where("task_id = ?", taskID)).
		Group("task_id, currency").Order("currency").Scan(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("sum the attempts' cost: %w", err)
	}
	var capMicros *int64
	if err := db.Model(&attemptRow{}).Select("MIN(max_cost_micros)").Where("task_id = ? AND max_cost_micros > 0", taskID).
		Scan(&capMicros).Error; err != nil {
		return nil, 0, fmt.Errorf("read the attempts' cost cap: %w", err)
	}
	_, by := costs(rows)
	limit := 0.0
	if capMicros != nil {
		limit = float64(*capMicros) / microsPerUnit
	}
	return by[taskID], limit, nil
}

func (s *Store) updateAttempt(ctx context.Context, sessionID string, changes map[string]any) error {
	res := s.db.WithContext(ctx).Model(&attemptRow{}).Where("session_id = ?", sessionID).Updates(changes)
	if res.Error != nil {
		return fmt.Errorf("update attempt: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return missing("attempt")
	}
	return nil
}
