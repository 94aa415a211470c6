package store

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"conch/shared"

	"golang.org/x/sync/errgroup"
	"gorm.io/gorm"
)

// Search across sessions. message_search holds the text each searchable message is found
// by (searchText), one row per message, written in the transaction that writes the message
// and removed with it (ON DELETE CASCADE). Its id orders the results, newest first, and
// is the cursor of a page. Each database indexes it its own way (dialect.search): SQLite
// an FTS4 table over it kept by triggers, PostgreSQL a generated tsvector column under a
// GIN index. Both split words the same plain way (SQLite's unicode61, PostgreSQL's
// 'simple': no stemming and no stop words, which suits commands, paths and code).
//
// Command output is searched too, in its own table (outsearch.go): a search runs both
// and merges them.

// Snippet markers: a snippet comes from the database with the words found between these
// two, and searchText takes them out of the text first, so that no stored text can fake one.
const (
	hitStart = "\x02"
	hitEnd   = "\x03"
)

var unmark = strings.NewReplacer(hitStart, " ", hitEnd, " ")

// searchText is the text a message is found by, "" for one that is not searched: a
// prompt's or an agent message's content, a shell command's command line.
func searchText(typ shared.MessageType, content string, md *shared.Metadata) string {
	text := ""
	switch {
	case typ == shared.TypeMessage:
		text = content
	case typ == shared.TypeToolExecute && md != nil && md.Normalized != nil && md.Normalized.ShellExec != nil:
		text = md.Normalized.ShellExec.Command
	}
	return unmark.Replace(text)
}

// index keeps the message's search row in step with its text, in the write's transaction.
func index(tx *gorm.DB, messageID, taskID, text string) error {
	if text == "" {
		return tx.Exec(`DELETE FROM message_search WHERE message_id = ?`, messageID).Error
	}
	return tx.Exec(`INSERT INTO message_search (message_id, task_id, body) VALUES (?, ?, ?)
		ON CONFLICT (message_id) DO UPDATE SET body = excluded.body`, messageID, taskID, text).Error
}

// indexAll fills message_search from the messages stored before it existed (a schema step).
func indexAll(tx *gorm.DB, d *dialect) error {
	for _, stmt := range d.searchSchema("message_search", false, "") {
		if err := tx.Exec(stmt).Error; err != nil {
			return fmt.Errorf("create the search index: %w", err)
		}
	}
	var batch []messageRow
	return tx.Select("id, task_id, type, content, metadata").
		Where("type IN ?", []string{string(shared.TypeMessage), string(shared.TypeToolExecute)}).
		Order("created_at, id").FindInBatches(&batch, 500, func(tx *gorm.DB, _ int) error {
		for _, r := range batch {
			m, err := r.message()
			if err != nil {
				return err
			}
			if err := index(tx, r.ID, r.TaskID, searchText(m.Type, r.Content, m.Metadata)); err != nil {
				return err
			}
		}
		return nil
	}).Error
}

// Readable is which tasks a search may find messages of: every task, or only those
// listed. The zero value reads none, so a caller that forgets it finds nothing.
type Readable struct {
	All   bool
	Tasks []string
}

// EveryTask reads every task.
var EveryTask = Readable{All: true}

// Search returns a page of the messages whose text has every term of q.Query, and of the
// output documents (outsearch.go) that have them, among the tasks r lets the caller read:
// each list newest first, the two merged by their message's time. The cursor says how far
// each list went ("" not started, 0 done).
func (s *Store) Search(ctx context.Context, q shared.SearchRequest, r Readable) (shared.SearchPage, error) {
	page := shared.SearchPage{Results: []shared.SearchResult{}}
	terms, err := shared.SearchTerms(q.Query)
	if err != nil {
		return page, err
	}
	limit := q.Limit
	switch {
	case limit == 0:
		limit = shared.DefaultSearchHits
	case limit < 0 || limit > shared.MaxSearchHits:
		return page, shared.Errorf(shared.CodeInvalid, "limit must be 1 to %d", shared.MaxSearchHits)
	}
	before := [2]int64{-1, -1} // messages, outputs; -1: from the newest
	if q.Cursor != "" {
		if before, err = parseCursor(q.Cursor); err != nil {
			return page, err
		}
	}
	if !r.All && len(r.Tasks) == 0 {
		return page, nil
	}
	var lists [2][]found
	g, gctx := errgroup.WithContext(ctx)
	for i, find := range []func(context.Context, []string, int64, Readable, int) ([]found, error){s.searchMessages, s.searchOutputs} {
		if before[i] == 0 {
			continue
		}
		g.Go(func() (err error) {
			lists[i], err = find(gctx, terms, before[i], r, limit+1)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return page, fmt.Errorf("search: %w", err)
	}
	// The newer head of the two lists, a message first at the same time, until the page is
	// full; a list taken to its end (it had no row past the page) is done.
	var taken [2]int
	for len(page.Results) < limit {
		i := 0
		if len(lists[0]) == taken[0] || len(lists[1]) > taken[1] && lists[1][taken[1]].CreatedAt.After(lists[0][taken[0]].CreatedAt) {
			i = 1
		}
		if len(lists[i]) == taken[i] {
			break
		}
		page.Results = append(page.Results, lists[i][taken[i]].SearchResult)
		taken[i]++
	}
	next := before
	for i, l := range lists {
		switch {
		case taken[i] > 0:
			next[i] = l[taken[i]-1].id
		case len(l) == 0:
			next[i] = 0
		}
		if taken[i] == len(l) {
			next[i] = 0
		}
		page.HasMore = page.HasMore || taken[i] < len(l)
	}
	if page.HasMore {
		part := func(n int64) string {
			if n < 0 {
				return ""
			}
			return strconv.FormatInt(n, 10)
		}
		page.Cursor = part(next[0]) + "." + part(next[1])
	}
	return page, nil
}

// parseCursor reads a cursor Search returned: the id each list goes on before, 0 for a
// list at its end.
func parseCursor(cursor string) ([2]int64, error) {
	var before [2]int64
	m, o, ok := strings.Cut(cursor, ".")
	for i, part := range []string{m, o} {
		if part == "" {
			before[i] = -1
			continue
		}
		n, err := strconv.ParseInt(part, 10, 64)
		if !ok || err != nil || n < 0 || n == 0 && part != "0" {
			return before, shared.Errorf(shared.CodeInvalid, "cursor is not one a search returned")
		}
		before[i] = n
	}
	return before, nil
}

// found is a result and its id in its list.
type found struct {
	shared.SearchResult
	id int64
}

// searchMessages finds at most limit messages for terms, before the id before (-1: from
// the newest).
func (s *Store) searchMessages(ctx context.Context, terms []string, before int64, r Readable, limit int) ([]found, error) {
	return s.searchIn(s.db.WithContext(ctx), s.dialect.searchQuery, false, terms, before, r, limit)
}

// searchOutputs finds at most limit output documents for terms, before the id before: a
// partition at a time (SQLite's outputParts), or among the newest documents first
// (PostgreSQL's outputWalk), then with the index.
func (s *Store) searchOutputs(ctx context.Context, terms []string, before int64, r Readable, limit int) ([]found, error) {
	if s.dialect.outputParts != nil {
		return s.searchParts(ctx, terms, before, r, limit)
	}
	db := s.db.WithContext(ctx)
	list, err := s.searchIn(db, s.dialect.outputWalk, true, terms, before, r, limit)
	if err != nil || len(list) == limit {
		return list, err
	}
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(s.dialect.forceIndex).Error; err != nil {
			return err
		}
		var err error
		list, err = s.searchIn(tx.WithContext(withSetup(ctx, s.dialect.forceIndex)), s.dialect.outputQuery, true, terms, before, r, limit)
		return err
	}, &sql.TxOptions{ReadOnly: true})
	return list, err
}

// searchParts is searchOutputs on SQLite's partitioned output index: the ids of the page,
// a partition at a time, newest first, until it is full (partIDs, prepared once for the
// search), but for the partitions whose words lack one of the search's (partsWithout),
// then their documents (partRows).
func (s *Store) searchParts(ctx context.Context, terms []string, before int64, r Readable, limit int) ([]found, error) {
	pool, err := s.db.DB()
	if err != nil {
		return nil, err
	}
	top := before - 1
	if before < 0 {
		if err := pool.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM output_search`).Scan(&top); err != nil {
			return nil, err
		}
	}
	where, vars := "", []any{match(terms)}
	if before > 0 {
		where += " AND f.docid < ?"
		vars = append(vars, before)
	}
	if !r.All {
		where += " AND s.task_id IN (?" + strings.Repeat(", ?", len(r.Tasks)-1) + ")"
		for _, t := range r.Tasks {
			vars = append(vars, t)
		}
	}
	stmt, err := pool.PrepareContext(ctx, fmt.Sprintf(s.dialect.partIDs, where))
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	var ids []int64
	var skip map[int64]bool // learnt once the first partition asked has not filled the page
	for part := top >> outputPartBits; part >= 0 && len(ids) < limit; part-- {
		if skip == nil && part < top>>outputPartBits {
			if skip, err = s.partsWithout(ctx, pool, terms, top>>outputPartBits); err != nil {
				return nil, err
			}
		}
		if skip[part] {
			continue
		}
		rs, err := stmt.QueryContext(ctx, append(vars, part, limit-len(ids))...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var id int64
			if err := rs.Scan(&id); err != nil {
				rs.Close()
				return nil, err
			}
			ids = append(ids, id)
		}
		if err := rs.Close(); err != nil {
			return nil, err
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rs, err := s.db.WithContext(ctx).Raw(s.dialect.partRows, ids).Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	return scanFound(rs, terms, true)
}

// match is the full-text query of terms: every term a phrase, so that the database's own
// query syntax (AND, OR, NEAR, -) is never read from a person's text.
func match(terms []string) string {
	phrases := make([]string, len(terms))
	for i, t := range terms {
		phrases[i] = `"` + t + `"`
	}
	return strings.Join(phrases, " ")
}

// searchIn runs a search query of the dialect (searchQuery, outputWalk, outputQuery) for
// terms: at most limit results before the id before (-1: from the newest), of output
// documents when output.
func (s *Store) searchIn(db *gorm.DB, query string, output bool, terms []string, before int64, r Readable, limit int) ([]found, error) {
	where, vars := "", []any{match(terms)}
	if before > 0 {
		where += " AND " + s.dialect.searchID + " < ?"
		vars = append(vars, before)
	}
	if !r.All {
		where += " AND s.task_id IN ?"
		vars = append(vars, r.Tasks)
	}
	rs, err := db.Raw(fmt.Sprintf(query, where), append(vars, limit)...).Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	return scanFound(rs, terms, output)
}

// scanFound reads the results of a search query: messages, or output documents, whose
// line for terms it finds.
func scanFound(rs *sql.Rows, terms []string, output bool) ([]found, error) {
	var list []found
	for rs.Next() {
		var (
			f       found
			created int64
			stream  int
			start   int64
			text    string
		)
		cols := []any{&f.id, &f.MessageID, &f.SessionID, &f.TaskID, &f.TaskTitle, &f.Type, &f.AuthorType, &created}
		if output {
			cols = append(cols, &stream, &start)
		}
		if err := rs.Scan(append(cols, &text)...); err != nil {
			return nil, err
		}
		f.CreatedAt = fromNanos(created)
		if output {
			at, line := hitLine(text, terms)
			f.Snippet, f.Output = line, &shared.OutputHit{Stream: streamNames[stream], Offset: start + int64(at)}
		} else {
			f.Snippet = snippetParts(text)
		}
		list = append(list, f)
	}
	return list, rs.Err()
}

// streamNames are the streams as results name them.
var streamNames = map[int]string{streamStdout: "stdout", streamStderr: "stderr"}

// snippetParts splits a snippet as the database marked it into runs of text and hits.
func snippetParts(s string) []shared.SnippetPart {
	var parts []shared.SnippetPart
	for i, run := range strings.Split(s, hitStart) {
		text, rest, hit := strings.Cut(run, hitEnd)
		if i == 0 || !hit {
			text, rest, hit = run, "", false
		}
		for _, p := range []shared.SnippetPart{{Text: text, Hit: hit}, {Text: rest}} {
			if p.Text != "" {
				parts = append(parts, p)
			}
		}
	}
	return parts
}
