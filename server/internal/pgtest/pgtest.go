// Package pgtest gives tests a real PostgreSQL: a throwaway cluster that it starts from
// Debian's postgresql package (initdb and pg_ctl, as the postgres user when run as root,
// in a temporary directory, on a free loopback port), or the server CONCH_TEST_POSTGRES
// names. Each test gets a database of its own.
//
// A package whose tests use it runs them through Main, which stops the cluster at the end:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// CONCH_TEST_DB=postgres makes DSN name a fresh PostgreSQL database instead of a SQLite
// file, so that one suite runs on both (the Makefile runs it twice).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Missing is the advice given when no PostgreSQL can be had.
const Missing = "PostgreSQL is needed: install Debian's package postgresql (apt-get install postgresql), " +
	"or set CONCH_TEST_POSTGRES to the URL of a server where the user may create databases"

// Server is a PostgreSQL server tests may create databases on.
type Server struct {
	// URL connects to its maintenance database as a user who may create databases.
	URL string
	dir string   // the cluster's directory, "" for a server this package did not start
	as  []string // the command prefix that runs the server's tools as its owner
	bin string
}

// Start initializes and starts a throwaway cluster, listening on a free 127.0.0.1 port
// (and a socket in its directory), trusting local connections. Stop removes it.
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "conch-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: the cluster belongs to the postgres user.
		owner, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%s (no postgres user: %w)", Missing, err)
		}
		uid, _ := strconv.Atoi(owner.Uid)
		gid, _ := strconv.Atoi(owner.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.as = []string{"runuser", "-u", "postgres", "--"}
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := s.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A throwaway cluster: durability is not wanted, speed is.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=300", port, dir)
	if err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s, nil
}

// Stop stops a cluster Start started and removes its directory; a server named by
// CONCH_TEST_POSTGRES is left alone.
func (s *Server) Stop() error {
	if s.dir == "" {
		return nil
	}
	err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	return errors.Join(err, os.RemoveAll(s.dir))
}

func (s *Server) run(tool string, args ...string) error {
	argv := append(slices.Clone(s.as), append([]string{filepath.Join(s.bin, tool)}, args...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.dir // the tools' owner may not enter the caller's directory
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	return nil
}

// binDir finds the server's programs: those of the newest PostgreSQL Debian installed,
// else pg_config's.
func binDir() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
	if len(found) > 0 {
		return filepath.Dir(found[len(found)-1]), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New(Missing + " (no initdb found)")
}

// version is the major version in /usr/lib/postgresql/N/bin/initdb.
func version(initdb string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return n
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// CreateDatabase creates an empty database and returns its URL and a function that drops it.
func (s *Server) CreateDatabase(ctx context.Context) (string, func() error, error) {
	var b [8]byte
	rand.Read(b[:])
	name := "conch_test_" + hex.EncodeToString(b[:])
	if err := s.exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return s.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// The process's server: CONCH_TEST_POSTGRES, or a cluster started on first use.
var process struct {
	sync.Mutex
	inMain bool
	srv    *Server
	err    error
}

// Main runs the tests and then stops the cluster they started, if any.
func Main(m *testing.M) int {
	process.Lock()
	process.inMain = true
	process.Unlock()
	code := m.Run()
	process.Lock()
	defer process.Unlock()
	if process.srv != nil {
		if err := process.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop the cluster:", err)
			code = max(code, 1)
		}
	}
	return code
}

// Shared returns the process's server, starting a cluster the first time when
// CONCH_TEST_POSTGRES names none.
func Shared() (*Server, error) {
	process.Lock()
	defer process.Unlock()
	if process.srv != nil || process.err != nil {
		return process.srv, process.err
	}
	if u := os.Getenv("CONCH_TEST_POSTGRES"); u != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			process.err = fmt.Errorf("CONCH_TEST_POSTGRES: %w", err)
			return nil, process.err
		}
		conn.Close(ctx)
		process.srv = &Server{URL: u}
		return process.srv, nil
	}
	if !process.inMain {
		// Without Main nothing would stop the cluster.
		process.err = errors.New("pgtest: this package's TestMain must run its tests through pgtest.Main")
		return nil, process.err
	}
	process.srv, process.err = Start()
	return process.srv, process.err
}

// Database returns the URL of a new, empty database for t, dropped when t ends. It fails
// the test, naming the package to install, when there is no PostgreSQL.
func Database(t testing.TB) string {
	t.Helper()
	srv, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	u, drop, err := srv.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("drop the test database: %v", err)
		}
	})
	return u
}

// Postgres reports whether the tests run on PostgreSQL (CONCH_TEST_DB=postgres) rather
// than SQLite (unset or sqlite); any other value fails t.
func Postgres(t testing.TB) bool {
	t.Helper()
	switch v := os.Getenv("CONCH_TEST_DB"); v {
	case "", "sqlite":
		return false
	case "postgres":
		return true
	default:
		t.Fatalf("CONCH_TEST_DB=%q: want sqlite or postgres", v)
		return false
	}
}

// DSN is the database a test's store opens: a SQLite file in a temporary directory, or
// a fresh PostgreSQL database when CONCH_TEST_DB=postgres.
func DSN(t testing.TB) string {
	t.Helper()
	if Postgres(t) {
		return Database(t)
	}
	return filepath.Join(t.TempDir(), "conch.db")
}

// SQLiteOnly skips t, saying why, in the PostgreSQL run: for tests of what only SQLite
// has (its file, its pragmas). They run in the SQLite run.
func SQLiteOnly(t testing.TB, why string) {
	t.Helper()
	if Postgres(t) {
		t.Skip("SQLite only: " + why)
	}
}
