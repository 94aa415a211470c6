package store

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	sqlite3 "github.com/mattn/go-sqlite3"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// dialect is what differs between SQLite and PostgreSQL. Everything else (the schema's
// statements, the queries, the keyset pages, the partial indexes) is written once, in
// SQL both accept.
type dialect struct {
	sqlite bool
	// ddl turns a schema statement, written for SQLite, into this database's.
	ddl func(string) string
	// countColumn counts the columns named by its second argument in the table named by
	// its first.
	countColumn string
	// migrationLock, run first in the migration's transaction, makes servers that start
	// together on one database migrate in turn ("" when the transaction alone does).
	migrationLock string
	// failure is err when it is a failure of the database itself (full, read-only,
	// unreachable, broken), nil for a refused request or no error (writeHealth).
	failure func(err error) error
	// size is a query of the bytes the database takes on disk.
	size string
	// textBytes is a format that turns the text column %s into bytes, in SQL.
	textBytes string
	// conns, when not 0, is how many connections the pool keeps open, idle or not: a new
	// PostgreSQL connection starts a server process, and database/sql keeps only 2 idle.
	conns int
	// writers is how many write transactions may run at once (writers.go); the others
	// wait for their turn before they begin.
	writers int
	// stampQuery is the updated_at of one message (id), if it is of the session and of the
	// type given, in this order (output.go's stampOf): prepared once, in this database's
	// placeholders.
	stampQuery string
	// explain returns the query plan of a statement, one step a line, planned after setup
	// (when not "") as it was run.
	explain func(ctx context.Context, db *sql.DB, setup, query string, vars []any) ([]string, error)
	// searchSchema indexes a table of searched text (message_search, output_search:
	// search.go, outsearch.go), its lists of ids kept newest first when desc, and kept
	// apart for each value of the column part when not "". searchQuery finds a page of
	// messages in message_search; outputWalk and outputQuery (PostgreSQL; SQLite's are in
	// partitions, outputParts) one of output documents in output_search: outputWalk among
	// the walkDocuments newest only, which fills the page of a common word, then, when its
	// page is not full, outputQuery after forceIndex (Store.searchOutputs). Each query's %s
	// takes conditions on searchID (the cursor) and s.task_id; its arguments are the
	// phrases, the conditions' and the page's size.
	searchSchema                         func(table string, desc bool, part string) []string
	searchQuery, outputWalk, outputQuery string
	searchID                             string
	// outputParts, when not nil, are the statements that index output_search in
	// partitions of 1<<outputPartBits documents by id (the column part), each with lists
	// of its own, merged into one when the next begins: a search then finds the ids of a
	// page a partition at a time, newest first, with partIDs (its %s takes the conditions
	// on f.docid and s.task_id; then the partition and the page's size), and reads them
	// with partRows, in place of outputQuery (Store.searchParts).
	outputParts       []string
	partIDs, partRows string
	// partWords, when not nil, are the statements that keep the words of the partitions
	// of output_search (output_search_parts, partwords.go), and drop a partition's as
	// soon as a document is written into it, so that they never lack one.
	partWords []string
	// forceIndex is run first in outputQuery's transaction, so that it takes the
	// full-text index whatever the planner guesses.
	forceIndex string
}

var sqliteDialect = &dialect{
	sqlite:      true,
	writers:     1,
	ddl:         func(stmt string) string { return stmt },
	countColumn: "SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?",
	textBytes:   "CAST(%s AS BLOB)",
	stampQuery:  "SELECT updated_at FROM messages WHERE id = ? AND session_id = ? AND type = ?",
	size:        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
	// FTS4 rather than FTS5: the driver builds FTS4 by default, and FTS5 only with a build
	// tag every build and test would need (docs/PERFORMANCE.md, "Search"). Its content is
	// message_search's (external content), so the text is stored once; the triggers keep
	// it in step, as FTS4's documentation shows.
	// With order=DESC a search newest first reads the lists of ids from their start and
	// stops at the page's end: in the default order it reads a common word's whole list
	// (docs/PERFORMANCE.md, "Search").
	searchSchema: fts4Schema,
	searchID:     "f.docid",
	searchQuery: `SELECT s.id, s.message_id, m.session_id, s.task_id, t.title, m.type, m.author_type, m.created_at,
			snippet(message_search_fts, char(2), char(3), '…', -1, 20)
		FROM message_search_fts AS f JOIN message_search AS s ON s.id = f.docid
			JOIN messages AS m ON m.id = s.message_id JOIN tasks AS t ON t.id = s.task_id
		WHERE message_search_fts MATCH ?%s ORDER BY f.docid DESC LIMIT ?`,
	partIDs: `SELECT f.docid FROM output_search_fts AS f JOIN output_search AS s ON s.id = f.docid
		WHERE output_search_fts MATCH ?%s AND f.part = ? ORDER BY f.docid DESC LIMIT ?`,
	partRows: `SELECT s.id, s.message_id, m.session_id, s.task_id, t.title, m.type, m.author_type, m.created_at,
			s.stream, s.start, s.body
		FROM output_search AS s JOIN messages AS m ON m.id = s.message_id JOIN tasks AS t ON t.id = s.task_id
		WHERE s.id IN ? ORDER BY s.id DESC`,
	outputParts: append([]string{
		`DROP TRIGGER output_search_bu`, `DROP TRIGGER output_search_bd`, `DROP TRIGGER output_search_au`, `DROP TRIGGER output_search_ai`,
		`DROP TABLE output_search_fts`,
		`ALTER TABLE output_search ADD COLUMN part INTEGER GENERATED ALWAYS AS (id >> ` + strconv.Itoa(outputPartBits) + `) VIRTUAL`,
	}, append(fts4Schema("output_search", true, "part"),
		`CREATE TRIGGER output_search_part AFTER INSERT ON output_search WHEN new.id % `+strconv.Itoa(1<<outputPartBits)+` = 0
			BEGIN INSERT INTO output_search_fts (output_search_fts) VALUES ('optimize'); END`,
		`INSERT INTO output_search_fts (docid, body, part) SELECT id, body, part FROM output_search`,
		`INSERT INTO output_search_fts (output_search_fts) VALUES ('optimize')`)...),
	partWords: []string{
		`CREATE TABLE output_search_parts (id INTEGER PRIMARY KEY, made TEXT NOT NULL, words BLOB NOT NULL)`,
		`CREATE VIRTUAL TABLE output_search_terms USING fts4aux(output_search_fts)`,
		`CREATE VIRTUAL TABLE output_search_tokens USING fts3tokenize(` + tokenizer + `)`,
		`CREATE TRIGGER output_search_stale_i AFTER INSERT ON output_search WHEN new.part IN (SELECT id FROM output_search_parts)
			BEGIN DELETE FROM output_search_parts WHERE id = new.part; END`,
		`CREATE TRIGGER output_search_stale_u AFTER UPDATE ON output_search WHEN new.part IN (SELECT id FROM output_search_parts)
			BEGIN DELETE FROM output_search_parts WHERE id = new.part; END`,
	},
	failure: func(err error) error {
		var se sqlite3.Error
		if errors.As(err, &se) && se.Code != sqlite3.ErrConstraint {
			return se
		}
		return nil
	},
	explain: func(ctx context.Context, db *sql.DB, _, query string, vars []any) ([]string, error) {
		rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, vars...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var steps []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				return nil, err
			}
			steps = append(steps, detail)
		}
		return steps, rows.Err()
	},
}

// fts4Schema is SQLite's searchSchema. With languageid, FTS4 keeps a separate index for each value of part (segments of
// their own), which a query names: a common word's list is read a partition at a time.
func fts4Schema(t string, desc bool, part string) []string {
	options, cols, vals := "", "", ""
	if desc {
		options = ", order=DESC, matchinfo=fts3"
	}
	if part != "" {
		options, cols, vals = options+`, languageid="`+part+`"`, ", "+part, ", new."+part
	}
	return []string{
		`CREATE VIRTUAL TABLE ` + t + `_fts USING fts4(content="` + t + `", body, tokenize=` + strings.Replace(tokenizer, ",", "", 1) + options + `)`,
		`CREATE TRIGGER ` + t + `_bu BEFORE UPDATE ON ` + t + ` BEGIN DELETE FROM ` + t + `_fts WHERE docid = old.id; END`,
		`CREATE TRIGGER ` + t + `_bd BEFORE DELETE ON ` + t + ` BEGIN DELETE FROM ` + t + `_fts WHERE docid = old.id; END`,
		`CREATE TRIGGER ` + t + `_au AFTER UPDATE ON ` + t + ` BEGIN INSERT INTO ` + t + `_fts (docid, body` + cols + `) VALUES (new.id, new.body` + vals + `); END`,
		`CREATE TRIGGER ` + t + `_ai AFTER INSERT ON ` + t + ` BEGIN INSERT INTO ` + t + `_fts (docid, body` + cols + `) VALUES (new.id, new.body` + vals + `); END`,
	}
}

// tokenizer is how SQLite's full-text indexes split words (fts3tokenize's arguments; FTS4
// takes them without the comma).
const tokenizer = `unicode61, "remove_diacritics=2"`

// postgresSchemes are the URL schemes that name a PostgreSQL database.
var postgresSchemes = []string{"postgres", "postgresql"}

// postgresTypes maps SQLite's words in the schema to PostgreSQL's: INTEGER is 64-bit in
// SQLite (nanosecond times, byte counts) and 32-bit in PostgreSQL, whose tables are all
// heaps (no WITHOUT ROWID).
var (
	sqliteTypes   = regexp.MustCompile(`\b(INTEGER|BLOB)\b| WITHOUT ROWID`)
	postgresTypes = map[string]string{"INTEGER": "BIGINT", "BLOB": "BYTEA", " WITHOUT ROWID": ""}
)

var postgresDialect = &dialect{
	ddl: func(stmt string) string {
		return sqliteTypes.ReplaceAllStringFunc(stmt, func(t string) string { return postgresTypes[t] })
	},
	countColumn:   "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND column_name = ?",
	textBytes:     "convert_to(%s, 'UTF8')",
	stampQuery:    "SELECT updated_at FROM messages WHERE id = $1 AND session_id = $2 AND type = $3",
	size:          "SELECT pg_database_size(current_database())",
	migrationLock: "SELECT pg_advisory_xact_lock(7270637463) -- 'conch' in ASCII",
	conns:         32,
	writers:       4,
	searchSchema: func(t string, _ bool, _ string) []string {
		return []string{
			`ALTER TABLE ` + t + ` ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY`,
			`ALTER TABLE ` + t + ` ADD COLUMN words tsvector GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED`,
			`CREATE INDEX idx_` + t + `_words ON ` + t + ` USING GIN (words)`,
		}
	},
	searchID: "s.id",
	// The page is found first and only its rows are highlighted: ts_headline reads the
	// whole text again. The query is a function in FROM, not a CTE: the planner folds it
	// into a constant and weighs it against the column's statistics, so a rare word goes
	// through the GIN index and a common one walks the ids newest first until the page is
	// full. Which one a word outside the statistics' sample gets follows the sample; the
	// walk then forced index of output search was tried here and was worse: a word common
	// in older messages but not in the newest 1,024 then read its whole list from the
	// index (docs/PERFORMANCE.md, "Search").
	searchQuery: `WITH hits AS (SELECT s.id, s.message_id, s.task_id, s.body, q
			FROM message_search AS s, websearch_to_tsquery('simple', ?) AS q
			WHERE s.words @@ q%s ORDER BY s.id DESC LIMIT ?)
		SELECT h.id, h.message_id, m.session_id, h.task_id, t.title, m.type, m.author_type, m.created_at,
			ts_headline('simple', h.body, h.q, 'StartSel=' || chr(2) || ', StopSel=' || chr(3) ||
				', MaxFragments=2, MaxWords=24, MinWords=8, FragmentDelimiter=" … "')
		FROM hits AS h JOIN messages AS m ON m.id = h.message_id JOIN tasks AS t ON t.id = h.task_id
		ORDER BY h.id DESC`,
	outputWalk:  pgOutputHits(`(SELECT * FROM output_search AS s WHERE true%s ORDER BY s.id DESC LIMIT `+strconv.Itoa(walkDocuments)+`)`, ""),
	outputQuery: pgOutputHits("output_search", "%s"),
	// Neither a scan of the table nor a walk of its ids: the GIN index, then the page's
	// ids sorted.
	forceIndex: "SELECT set_config('enable_seqscan', 'off', true), set_config('enable_indexscan', 'off', true)",
	failure: func(err error) error {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			// Classes of the server's own trouble: connection, resources (disk full),
			// operator intervention (shutdown), system error, internal error; and a
			// read-only server.
			switch pe.Code[:2] {
			case "08", "53", "57", "58", "XX":
				return pe
			}
			if pe.Code == "25006" {
				return pe
			}
			return nil
		}
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) {
			return ce
		}
		return nil
	},
	explain: func(ctx context.Context, db *sql.DB, setup, query string, vars []any) ([]string, error) {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		// On a small table a sequential scan costs less than any index, so the plan would
		// tell nothing of the indexes. With sequential scans priced out, the plan is the
		// one a large table gets, and it still scans where no index serves.
		for _, stmt := range []string{"SET LOCAL enable_seqscan = off", setup} {
			if stmt == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return nil, err
			}
		}
		rows, err := tx.QueryContext(ctx, "EXPLAIN "+query, vars...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var steps []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return nil, err
			}
			steps = append(steps, strings.TrimSpace(line))
		}
		return steps, rows.Err()
	},
}

// pgOutputHits is PostgreSQL's outputWalk (from the newest documents) and outputQuery
// (from them all, with where): the page's documents (hits), found newest first, then read
// with their messages and tasks; the page shows a line of each, found in Go (hitLine).
//
// Output documents are large (kilobytes, stored out of line), so testing one costs far
// more than the planner counts, and a word it takes for one in 200 documents (its floor
// for a word it has no statistics of, however rare) walked every document: 180 ms at
// 30,000. So the walkDocuments newest documents are tested first, which fills the page of
// a common word, and only a page not full asks the GIN index (with forceIndex).
func pgOutputHits(from, where string) string {
	return `WITH q AS (SELECT websearch_to_tsquery('simple', ?) AS q),
		hits AS (SELECT s.id, s.message_id, s.task_id, s.stream, s.start, s.body FROM ` + from + ` AS s, q
			WHERE s.words @@ q.q` + where + ` ORDER BY s.id DESC LIMIT ?)
		SELECT h.id, h.message_id, m.session_id, h.task_id, t.title, m.type, m.author_type, m.created_at,
			h.stream, h.start, h.body
		FROM hits AS h JOIN messages AS m ON m.id = h.message_id JOIN tasks AS t ON t.id = h.task_id
		ORDER BY h.id DESC`
}

// outputPartBits sets the size of the partitions of SQLite's output index (outputParts):
// 1<<outputPartBits document ids each, about 15 MB of text. A partition's list of a word
// in every document is read in well under a millisecond, and an absent word costs a
// look in each partition. The schema step that made the partitions fixes it.
const outputPartBits = 12

// walkDocuments is how many of the newest output documents PostgreSQL's outputWalk tests.
const walkDocuments = 1024

// locked makes a query in a transaction lock the rows it reads until the transaction
// ends, for a read then a write: under PostgreSQL's READ COMMITTED a write committed
// between the two would be lost. SQLite's writers already take turns (_txlock=immediate),
// and GORM's SQLite dialect leaves the clause out.
func locked(tx *gorm.DB) *gorm.DB {
	return tx.Clauses(clause.Locking{Strength: "NO KEY UPDATE"})
}

// Redact hides the password of a database URL, for messages and logs; a file path is
// returned as it is.
func Redact(db string) string {
	if !IsURL(db) {
		return db
	}
	u, err := url.Parse(db)
	if err != nil {
		return "a database URL that does not parse"
	}
	return u.Redacted()
}
