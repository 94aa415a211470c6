package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"testing"

	"conch/server/store"
	"conch/shared"
)

// While a database has no admin, each start prints a new one-time link that makes one;
// once there is an admin it prints none.
func TestSetupLinkUntilThereIsAnAdmin(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(filepath.Join(t.TempDir(), "conch.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	link := regexp.MustCompile(`^no admin account yet: create it within a day at http://127\.0\.0\.1:8080/invite/[A-Z2-7]{26}\n$`)
	var first, second bytes.Buffer
	for _, out := range []*bytes.Buffer{&first, &second} {
		if err := printSetupLink(ctx, out, st, "127.0.0.1:8080"); err != nil {
			t.Fatal(err)
		}
		if !link.Match(out.Bytes()) {
			t.Errorf("printed %q", out)
		}
	}
	if first.String() == second.String() {
		t.Error("two starts printed the same link")
	}
	if _, err := st.CreateAccount(ctx, "ada", shared.RoleAdmin, "hash"); err != nil {
		t.Fatal(err)
	}
	var after bytes.Buffer
	if err := printSetupLink(ctx, &after, st, "127.0.0.1:8080"); err != nil || after.Len() != 0 {
		t.Errorf("with an admin: %q, %v", after.String(), err)
	}
}
