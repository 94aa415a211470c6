package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"conch/server/waittest"
	"conch/shared"
)

// While every slot of the gate is taken, a write transaction waits before it begins (and
// one given up changes nothing), a read-only one does not wait, and the slots come back
// after each commit and each rollback.
func TestWriteTransactionsTakeTurns(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	gate, ok := s.db.ConnPool.(writeGate)
	if !ok {
		t.Fatalf("the store's pool is a %T, not a writeGate", s.db.ConnPool)
	}
	limit := time.After(waittest.Limit(t))
	wait := func(what string, c <-chan error) error {
		t.Helper()
		select {
		case err := <-c:
			return err
		case <-limit:
			t.Fatalf("%s: not in time", what)
			return nil
		}
	}
	// Every slot taken by a transaction that waits to commit.
	entered, release := make(chan error, cap(gate.slots)), make(chan struct{})
	held := make(chan error, cap(gate.slots))
	for i := range cap(gate.slots) {
		go func() {
			held <- s.db.Transaction(func(tx *gorm.DB) error {
				err := tx.Exec("SELECT 1").Error
				entered <- err
				<-release
				return err
			})
		}()
		if err := wait(fmt.Sprint("held transaction ", i+1), entered); err != nil {
			t.Fatal(err)
		}
	}

	// (SQLite begins every transaction as a writer: _txlock=immediate.)
	if !s.dialect.sqlite {
		var n int64
		if err := s.db.Transaction(func(tx *gorm.DB) error {
			return tx.Raw("SELECT COUNT(*) FROM messages").Scan(&n).Error
		}, &sql.TxOptions{ReadOnly: true}); err != nil {
			t.Fatalf("read-only transaction while the writers' slots are taken: %v", err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	late, began := make(chan error, 1), make(chan struct{})
	go func() {
		late <- s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			close(began)
			return tx.Exec("UPDATE tasks SET title = ? WHERE id = ?", "late", sess.TaskID).Error
		})
	}()
	waittest.Until(t, func() bool {
		select {
		case <-began:
			t.Fatal("a write transaction began while every slot was taken")
		default:
		}
		return waitsAtGate()
	})
	cancel()
	if err := wait("the late transaction", late); !errors.Is(err, context.Canceled) {
		t.Fatalf("a write transaction given up while it waited for a slot: %v, want %v", err, context.Canceled)
	}

	close(release)
	for range cap(gate.slots) {
		if err := wait("a held transaction's commit", held); err != nil {
			t.Fatal(err)
		}
	}
	if len(gate.slots) != 0 {
		t.Fatalf("%d slots still taken after every transaction ended", len(gate.slots))
	}
	boom := errors.New("boom")
	for range 2 * cap(gate.slots) {
		if err := s.db.Transaction(func(*gorm.DB) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("rolled back: %v, want %v", err, boom)
		}
	}
	if len(gate.slots) != 0 {
		t.Fatalf("%d slots still taken after rollbacks", len(gate.slots))
	}
	task, err := s.GetTask(context.Background(), sess.TaskID)
	if err != nil || task.Title != "task" {
		t.Fatalf("task %q (%v): want the title the late transaction did not write", task.Title, err)
	}
	if _, err := s.CreateMessage(context.Background(), NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent,
		Type: shared.TypeMessage, Content: "after"}); err != nil {
		t.Fatal(err)
	}
}

// waitsAtGate reports whether a goroutine waits in writeGate.BeginTx for a slot.
func waitsAtGate() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.HasPrefix(g, "goroutine ") && strings.Contains(g, "[select") && strings.Contains(g, "store.writeGate.BeginTx(") {
			return true
		}
	}
	return false
}
