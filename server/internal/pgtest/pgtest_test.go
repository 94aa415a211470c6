package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// A cluster of its own starts, serves a database that answers, and is gone after Stop.
func TestStartStop(t *testing.T) {
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u, drop, err := srv.CreateDatabase(ctx)
	if err != nil {
		srv.Stop()
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err == nil {
		var one int
		err = conn.QueryRow(ctx, "SELECT 1").Scan(&one)
		conn.Close(ctx)
	}
	if err != nil {
		t.Error(err)
	}
	if err := drop(); err != nil {
		t.Error(err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.dir); !os.IsNotExist(err) {
		t.Errorf("the cluster's directory %s is left: %v", srv.dir, err)
	}
	if _, err := pgx.Connect(ctx, srv.URL); err == nil {
		t.Error("the stopped server still answers")
	}
}

// Each test's database is its own and empty.
func TestDatabasePerTest(t *testing.T) {
	ctx := context.Background()
	a, b := Database(t), Database(t)
	if a == b {
		t.Fatalf("two tests share %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT COUNT(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tables in a new database (%v)", n, err)
	}
}
