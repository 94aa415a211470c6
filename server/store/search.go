package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"conch/shared"

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
// Output bodies are not searched: a running command's 512 KiB would be indexed again at
// every flush, and the chat finds the command by its text.

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
	for _, stmt := range d.searchSchema {
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

// Search returns a page of the messages whose text has every term of q.Query, newest
// first, among the tasks r lets the caller read.
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
	before := int64(-1) // no cursor: from the newest
	if q.Cursor != "" {
		if before, err = strconv.ParseInt(q.Cursor, 10, 64); err != nil || before <= 0 {
			return page, shared.Errorf(shared.CodeInvalid, "cursor is not one a search returned")
		}
	}
	if !r.All && len(r.Tasks) == 0 {
		return page, nil
	}
	// Every term a phrase: the database's own query syntax (AND, OR, NEAR, -) is never
	// read from a person's text.
	phrases := make([]string, len(terms))
	for i, t := range terms {
		phrases[i] = `"` + t + `"`
	}
	where, vars := "", []any{strings.Join(phrases, " ")}
	if before > 0 {
		where += " AND " + s.dialect.searchID + " < ?"
		vars = append(vars, before)
	}
	if !r.All {
		where += " AND s.task_id IN ?"
		vars = append(vars, r.Tasks)
	}
	rs, err := s.db.WithContext(ctx).Raw(fmt.Sprintf(s.dialect.searchQuery, where), append(vars, limit+1)...).Rows()
	if err != nil {
		return page, fmt.Errorf("search: %w", err)
	}
	defer rs.Close()
	var id int64
	for rs.Next() {
		var (
			res     shared.SearchResult
			created int64
			snippet string
		)
		if err := rs.Scan(&id, &res.MessageID, &res.SessionID, &res.TaskID, &res.TaskTitle, &res.Type,
			&res.AuthorType, &created, &snippet); err != nil {
			return page, fmt.Errorf("search: %w", err)
		}
		if len(page.Results) == limit {
			page.HasMore = true
			break
		}
		res.CreatedAt, res.Snippet = fromNanos(created), snippetParts(snippet)
		page.Results = append(page.Results, res)
		page.Cursor = strconv.FormatInt(id, 10)
	}
	if err := rs.Err(); err != nil {
		return page, fmt.Errorf("search: %w", err)
	}
	return page, nil
}

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
