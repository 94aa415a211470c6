package store

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// TaskSessions returns the ids of a task's sessions; an unknown task is not found.
func (s *Store) TaskSessions(ctx context.Context, taskID string) ([]string, error) {
	var ids []string
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		ids, err = taskSessions(tx, taskID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("task sessions: %w", err)
	}
	return ids, nil
}

// taskSessions lists a task's sessions, after checking that the task exists.
func taskSessions(tx *gorm.DB, taskID string) ([]string, error) {
	var n int64
	if err := tx.Model(&taskRow{}).Where("id = ?", taskID).Count(&n).Error; err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, missing("task")
	}
	var ids []string
	err := tx.Model(&sessionRow{}).Where("task_id = ?", taskID).Order("created_at, id").Pluck("id", &ids).Error
	return ids, err
}

// DeleteTask removes a task with its sessions, messages and stored bodies in one
// transaction (the schema's ON DELETE CASCADE), and returns the ids of the sessions it
// removed, so that their agents are stopped and their subscribers told. The freed pages
// go back to the file system (see reclaim).
func (s *Store) DeleteTask(ctx context.Context, id string) ([]string, error) {
	var sessions []string
	use := s.usage()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if sessions, err = taskSessions(tx, id); err != nil {
			return err
		}
		if use.counts() { // what the storage limit counts of the task, given back
			var n int64
			if err := tx.Raw(taskStoredBytes, id, id).Scan(&n).Error; err != nil {
				return err
			}
			use.free(n)
		}
		return tx.Delete(&taskRow{}, "id = ?", id).Error
	})
	use.done(err)
	if err != nil {
		return nil, fmt.Errorf("delete task: %w", err)
	}
	s.reclaim(ctx)
	return sessions, nil
}

// taskStoredBytes sums what the storage limit counts of a task (storedBytes).
const taskStoredBytes = `SELECT (SELECT COALESCE(SUM(length(c.data)), 0) FROM shell_output_chunks AS c
		JOIN messages AS m ON m.id = c.message_id WHERE m.task_id = ?) +
	(SELECT COALESCE(SUM(a.size), 0) FROM attachments AS a
		JOIN task_sessions AS s ON s.id = a.session_id WHERE s.task_id = ?)`

// IdleTasks are the tasks whose last activity (the task, its sessions and their messages)
// is older than before, and none with a live session: what `conch prune` deletes
// (task.Prune).
func (s *Store) IdleTasks(ctx context.Context, before time.Time) ([]string, error) {
	cut := before.UnixNano()
	var ids []string
	err := s.db.WithContext(ctx).Model(&taskRow{}).
		Where("updated_at < ?", cut).
		Where(`NOT EXISTS (SELECT 1 FROM task_sessions AS s WHERE s.task_id = tasks.id AND (s.updated_at >= ? OR s.`+live+
			` OR EXISTS (SELECT 1 FROM messages AS m WHERE m.session_id = s.id AND m.updated_at >= ?)))`, cut, cut).
		Order("created_at").Pluck("id", &ids).Error
	if err != nil {
		return nil, fmt.Errorf("idle tasks: %w", err)
	}
	return ids, nil
}

// reclaim gives the pages freed by a delete back to the file system. The database runs
// with auto_vacuum = INCREMENTAL (see Open), so this moves no page holding data: it
// truncates the free ones. Its failure leaves the delete standing and costs space only,
// which the next delete reclaims. PostgreSQL's autovacuum does this itself.
func (s *Store) reclaim(ctx context.Context) {
	if !s.dialect.sqlite {
		return
	}
	// The pragma frees one page per step: read it to the end (an Exec steps once).
	rows, err := s.db.WithContext(ctx).Raw("PRAGMA incremental_vacuum").Rows()
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
	}
}
