package task

import (
	"context"
	"testing"
	"time"

	"conch/server/internal/pgtest"
	"conch/server/store"
	"conch/shared"
)

func newService(t *testing.T) (*Service, *store.Store) {
	t.Helper()
	st, err := store.Open(pgtest.DSN(t), nil) // SQLite, or PostgreSQL with CONCH_TEST_DB=postgres
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st, nil, nil, nil, nil, time.Now), st
}

// Who may edit and share a task: an admin any (with or without an account of its own),
// its owner and the editors it shares it with their own, a viewer none.
func TestWhoMayEditAndShare(t *testing.T) {
	s, st := newService(t)
	ctx := context.Background()
	account := func(login, role string) shared.Account {
		acc, err := st.CreateAccount(ctx, login, role, "hash")
		if err != nil {
			t.Fatal(err)
		}
		return acc
	}
	owner, editor, other := account("owner", shared.RoleMember), account("editor", shared.RoleMember), account("other", shared.RoleMember)
	admin, viewer := account("admin", shared.RoleAdmin), account("viewer", shared.RoleViewer)
	token := shared.Account{Login: shared.TokenLogin, Role: shared.RoleAdmin} // the server's --token
	task, err := st.CreateTaskOn(ctx, "t", "", "", "", "", owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ShareTask(ctx, task.ID, editor.Login); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		acc         shared.Account
		edit, share bool
	}{
		{owner, true, true}, {editor, true, false}, {other, false, false},
		{admin, true, true}, {token, true, true}, {viewer, false, false},
	} {
		err := s.CheckEdit(ctx, c.acc, &shared.AuditEvent{TaskID: task.ID})
		if (err == nil) != c.edit || err != nil && shared.ErrorCode(err) != shared.CodeForbidden {
			t.Errorf("%s edits: %v, want %v", c.acc.Login, err, c.edit)
		}
		err = s.CheckShare(ctx, c.acc, task.ID)
		if (err == nil) != c.share || err != nil && shared.ErrorCode(err) != shared.CodeForbidden {
			t.Errorf("%s shares: %v, want %v", c.acc.Login, err, c.share)
		}
		seen, err := s.SeenBy(ctx, c.acc, []shared.Task{task})
		if err != nil || len(seen) != 1 || seen[0].MayEdit != c.edit || seen[0].MayShare != c.share {
			t.Errorf("%s sees %+v, %v; want MayEdit %v, MayShare %v", c.acc.Login, seen, err, c.edit, c.share)
		}
	}
}
