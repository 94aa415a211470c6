package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"conch/shared"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// An agent's usage reports (ACP usage_update) are hostile numbers: they are checked here,
// the latest is kept on the session (its context gauge and cost), and what the cost grew
// by is added to the day's total of the session (usage_days), which the task list and
// GET /api/v1/usage sum.

// Bounds of a usage report: a context window is far below a trillion tokens, and no
// session costs a billion.
const (
	MaxUsageTokens = 1 << 40
	MaxCost        = 1e9
)

// microsPerUnit is the precision costs are summed at: integers, so that sums are exact.
const microsPerUnit = 1e6

// maxUsageDays bounds the days one usage report covers.
const maxUsageDays = 366

type usageDayRow struct {
	SessionID string `gorm:"primaryKey"`
	Day       string `gorm:"primaryKey"` // YYYY-MM-DD, UTC
	Currency  string `gorm:"primaryKey"`
	TaskID    string
	Micros    int64
}

func (usageDayRow) TableName() string { return "usage_days" }

// checkUsage refuses a report with negative or huge counts, a cost that is not a finite
// amount between 0 and MaxCost, or a currency that is not three capital letters.
func checkUsage(u shared.Usage) error {
	if u.ContextUsed < 0 || u.ContextSize < 0 || u.ContextUsed > MaxUsageTokens || u.ContextSize > MaxUsageTokens {
		return shared.Errorf(shared.CodeInvalid, "usage: token counts must be between 0 and %d, not %d of %d", int64(MaxUsageTokens), u.ContextUsed, u.ContextSize)
	}
	if c := u.Cost; c != nil {
		if math.IsNaN(c.Amount) || c.Amount < 0 || c.Amount > MaxCost {
			return shared.Errorf(shared.CodeInvalid, "usage: the cost must be between 0 and %g", float64(MaxCost))
		}
		if len(c.Currency) != 3 || c.Currency[0] < 'A' || c.Currency[0] > 'Z' || c.Currency[1] < 'A' || c.Currency[1] > 'Z' ||
			c.Currency[2] < 'A' || c.Currency[2] > 'Z' {
			return shared.Errorf(shared.CodeInvalid, "usage: the currency must be an ISO 4217 code such as USD")
		}
	}
	return nil
}

func micros(amount float64) int64 { return int64(math.Round(amount * microsPerUnit)) }

// SetSessionUsage records the agent's latest usage report on the session, and adds what
// its cost grew by since the last report to today's total (a cost that fell, or changed
// currency, counts whole: a new agent process counting afresh). A report checkUsage
// refuses is shared.CodeInvalid and changes nothing.
func (s *Store) SetSessionUsage(ctx context.Context, id string, u shared.Usage) (shared.Session, error) {
	if err := checkUsage(u); err != nil {
		return shared.Session{}, err
	}
	raw, err := json.Marshal(u)
	if err != nil {
		return shared.Session{}, err
	}
	now := s.now()
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := getSession(locked(tx), id)
		if err != nil {
			return err
		}
		if c := u.Cost; c != nil {
			grew := micros(c.Amount)
			if prev := row.usage(); prev != nil && prev.Cost != nil && prev.Cost.Currency == c.Currency && c.Amount >= prev.Cost.Amount {
				grew -= micros(prev.Cost.Amount)
			}
			if grew > 0 {
				day := usageDayRow{SessionID: id, Day: now.UTC().Format(time.DateOnly), Currency: c.Currency, TaskID: row.TaskID, Micros: grew}
				if err := tx.Clauses(clause.OnConflict{
					Columns:   []clause.Column{{Name: "session_id"}, {Name: "day"}, {Name: "currency"}},
					DoUpdates: clause.Assignments(map[string]any{"micros": gorm.Expr("usage_days.micros + excluded.micros")}),
				}).Create(&day).Error; err != nil {
					return err
				}
			}
		}
		return tx.Model(&sessionRow{}).Where("id = ?", id).Updates(map[string]any{"usage": string(raw), "updated_at": now.UnixNano()}).Error
	})
	if err != nil {
		return shared.Session{}, fmt.Errorf("set session usage: %w", err)
	}
	return s.GetSession(ctx, id)
}

// usage is the session's latest usage report, nil when none (or one that does not decode).
func (r sessionRow) usage() *shared.Usage {
	var u shared.Usage
	if r.Usage == "" || json.Unmarshal([]byte(r.Usage), &u) != nil {
		return nil
	}
	return &u
}

// costRow is a sum of usage_days.
type costRow struct {
	Key      string // the day or the task
	Currency string
	Micros   int64
}

// costs groups rows by key, in their order, into costs per currency.
func costs(rows []costRow) (keys []string, by map[string][]shared.Cost) {
	by = map[string][]shared.Cost{}
	for _, r := range rows {
		if _, ok := by[r.Key]; !ok {
			keys = append(keys, r.Key)
		}
		by[r.Key] = append(by[r.Key], shared.Cost{Amount: float64(r.Micros) / microsPerUnit, Currency: r.Currency})
	}
	return keys, by
}

// taskCosts sums the cost of each task's sessions, per currency; one task's when id is
// not "".
func (s *Store) taskCosts(db *gorm.DB, id string) (map[string][]shared.Cost, error) {
	q := db.Model(&usageDayRow{}).Select("task_id AS key, currency, SUM(micros) AS micros")
	if id != "" {
		q = q.Where("task_id = ?", id)
	}
	var rows []costRow
	if err := q.Group("task_id, currency").Order("task_id, currency").Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("sum the tasks' costs: %w", err)
	}
	_, by := costs(rows)
	return by, nil
}

// UsageReport sums the cost the agents reported per day and per task, from day from to
// day to (YYYY-MM-DD, UTC, both included; to defaults to today, from to 29 days before
// to). Days out of order, malformed, or more than a year apart are shared.CodeInvalid.
// Costs go with their task when it is deleted.
func (s *Store) UsageReport(ctx context.Context, from, to string) (shared.UsageReport, error) {
	end := s.now().UTC().Truncate(24 * time.Hour)
	var err error
	if to != "" {
		if end, err = time.Parse(time.DateOnly, to); err != nil {
			return shared.UsageReport{}, shared.Errorf(shared.CodeInvalid, "to must be a day such as 2026-12-04")
		}
	}
	start := end.AddDate(0, 0, -29)
	if from != "" {
		if start, err = time.Parse(time.DateOnly, from); err != nil {
			return shared.UsageReport{}, shared.Errorf(shared.CodeInvalid, "from must be a day such as 2026-12-01")
		}
	}
	if start.After(end) || end.Sub(start) >= maxUsageDays*24*time.Hour {
		return shared.UsageReport{}, shared.Errorf(shared.CodeInvalid, "from must be on or before to, at most %d days before", maxUsageDays-1)
	}
	out := shared.UsageReport{From: start.Format(time.DateOnly), To: end.Format(time.DateOnly), Days: []shared.UsageDay{}, Tasks: []shared.UsageTask{}}
	// A new statement for each query of the two (Session): GORM would add the second's
	// clauses to the first's.
	db := s.db.WithContext(ctx).Model(&usageDayRow{}).Where("day >= ? AND day <= ?", out.From, out.To).Session(&gorm.Session{})
	var rows []costRow
	if err := db.Select("day AS key, currency, SUM(micros) AS micros").Group("day, currency").Order("day, currency").Scan(&rows).Error; err != nil {
		return shared.UsageReport{}, fmt.Errorf("usage per day: %w", err)
	}
	days, byDay := costs(rows)
	for _, d := range days {
		out.Days = append(out.Days, shared.UsageDay{Day: d, Cost: byDay[d]})
	}
	rows = nil
	if err := db.Select("task_id AS key, currency, SUM(micros) AS micros").Group("task_id, currency").Order("task_id, currency").Scan(&rows).Error; err != nil {
		return shared.UsageReport{}, fmt.Errorf("usage per task: %w", err)
	}
	tasks, byTask := costs(rows)
	var titles []taskRow
	if err := s.db.WithContext(ctx).Select("id", "title").Where("id IN ?", append(tasks, "")).Find(&titles).Error; err != nil {
		return shared.UsageReport{}, fmt.Errorf("usage per task: %w", err)
	}
	for _, t := range titles {
		out.Tasks = append(out.Tasks, shared.UsageTask{TaskID: t.ID, Title: t.Title, Cost: byTask[t.ID]})
	}
	slices.SortFunc(out.Tasks, func(a, b shared.UsageTask) int { return cmp.Compare(a.TaskID, b.TaskID) })
	return out, nil
}
