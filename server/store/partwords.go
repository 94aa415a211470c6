package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/bits-and-blooms/bloom/v3"
)

// The words of the partitions of SQLite's output index (dialect.outputParts). A search
// asks the partitions one at a time, newest first, until its page is full, so a word that
// is absent or rare asked every partition, one look-up each (70 at 1 GiB of output). Each
// partition but the newest has its words in output_search_parts, as a Bloom filter of the
// terms of its index (fts4aux), which never says a word it holds is absent: a search
// splits its terms into words as the index does (fts3tokenize) and skips the partitions
// whose filter lacks one (partsWithout), in memory. A filter is made in the background,
// off every writer's path: its terms are read without a transaction and kept only if the
// partition's lists (its rows of the index's segdir, new ones on every write) are the same
// before, after, and when the filter is stored; a write into a partition drops its filter
// (the triggers of dialect.partWords). The next search that finds a partition without one
// starts making it. docs/PERFORMANCE.md, "Search", has the figures.

// partWords holds the filters read so far and the one background maker.
type partWords struct {
	mu      sync.Mutex
	filters map[int64]partFilter
	making  bool
	closed  bool
	made    sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

// partFilter is a partition's filter and the state of its lists it was made from (a hash
// of partState's answer).
type partFilter struct {
	made  string
	words *bloom.BloomFilter
}

// wordsFalsePositives is the share of absent words a filter lets through: the partitions
// a search asks in vain.
const wordsFalsePositives = 0.01

// minWords is the fewest words a filter is sized for: a filter sized for a handful lets
// through more than wordsFalsePositives (its bits are few).
const minWords = 1024

const (
	// partState is the state of a partition's lists (?: the partition). FTS4 keeps the
	// lists of languageid L at levels L*1024 to L*1024+1023 of its segdir; every write
	// adds a segment there, in blocks never used before or, when small, all in its root.
	partState = `SELECT COALESCE(group_concat(segment, ' '), '') FROM
		(SELECT level || '.' || idx || '.' || start_block || '.' || end_block || '.' || hex(root) AS segment
		FROM output_search_fts_segdir WHERE level >= ? * 1024 AND level < (? + 1) * 1024 ORDER BY level, idx)`
	partTerms = `SELECT term FROM output_search_terms WHERE languageid = ? AND col = '*'`
	// partSave stores a filter if the partition's lists are still those it was made from.
	partSave = `INSERT INTO output_search_parts (id, made, words) SELECT ?, ?, ? WHERE (` + partState + `) = ?
		ON CONFLICT (id) DO NOTHING`
	partList   = `SELECT id, made FROM output_search_parts`
	partLoad   = `SELECT words FROM output_search_parts WHERE id = ? AND made = ?`
	partTokens = `SELECT token FROM output_search_tokens WHERE input = ?`
)

func newPartWords() *partWords {
	ctx, cancel := context.WithCancel(context.Background())
	return &partWords{filters: map[int64]partFilter{}, ctx: ctx, cancel: cancel}
}

// close stops the maker and waits for it.
func (w *partWords) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	w.made.Wait()
}

// partsWithout returns the partitions below open (the newest) that need not be asked for
// terms: those whose filter lacks one of their words. It reads the filters made since it
// last looked, and starts making those missing.
func (s *Store) partsWithout(ctx context.Context, pool *sql.DB, terms []string, open int64) (map[int64]bool, error) {
	words, err := column[string](ctx, pool, partTokens, strings.Join(terms, " "))
	if err != nil {
		return nil, err
	}
	filters, err := s.partFilters(ctx, pool)
	if err != nil {
		return nil, err
	}
	skip := map[int64]bool{}
	missing := false
	for part := range open {
		f, ok := filters[part]
		missing = missing || !ok
		for _, w := range words {
			if ok && !f.words.TestString(w) {
				skip[part] = true
				break
			}
		}
	}
	if missing {
		s.makePartWords(open)
	}
	return skip, nil
}

// partFilters returns the filters stored now, reading those it has not read yet.
func (s *Store) partFilters(ctx context.Context, pool *sql.DB) (map[int64]partFilter, error) {
	rs, err := pool.QueryContext(ctx, partList)
	if err != nil {
		return nil, err
	}
	stored := map[int64]string{}
	for rs.Next() {
		var part int64
		var made string
		if err := rs.Scan(&part, &made); err != nil {
			rs.Close()
			return nil, err
		}
		stored[part] = made
	}
	if err := rs.Close(); err != nil {
		return nil, err
	}
	w := s.words
	w.mu.Lock()
	defer w.mu.Unlock()
	for part, f := range w.filters {
		if made, ok := stored[part]; !ok || made != f.made {
			delete(w.filters, part)
		}
	}
	for part, made := range stored {
		if _, ok := w.filters[part]; ok {
			continue
		}
		var blob []byte
		switch err := pool.QueryRowContext(ctx, partLoad, part, made).Scan(&blob); err {
		case nil:
		case sql.ErrNoRows: // dropped since it was listed
			continue
		default:
			return nil, err
		}
		f := partFilter{made: made, words: &bloom.BloomFilter{}}
		if err := f.words.UnmarshalBinary(blob); err != nil {
			// Then the partition is asked, as one without words.
			slog.Warn("store: the words of an output partition", "partition", part, "err", err)
			continue
		}
		w.filters[part] = f
	}
	return maps.Clone(w.filters), nil
}

// MakePartWords makes now the words of SQLite's output partitions that have none, which
// the next search would start making in the background; on PostgreSQL it does nothing.
// It is for after a bulk load, as ANALYZE is for PostgreSQL's plans.
func (s *Store) MakePartWords(ctx context.Context) error {
	if s.words == nil {
		return nil
	}
	var open int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(id), 0) >> ? FROM output_search`, outputPartBits).Scan(&open).Error; err != nil {
		return err
	}
	return s.makeMissing(ctx, open)
}

// makePartWords starts making the filters missing below the partition open, unless a
// maker runs already.
func (s *Store) makePartWords(open int64) {
	w := s.words
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.making || w.closed {
		return
	}
	w.making = true
	w.made.Add(1)
	go func() {
		defer w.made.Done()
		err := s.makeMissing(w.ctx, open)
		w.mu.Lock()
		w.making = false
		w.mu.Unlock()
		if err != nil && w.ctx.Err() == nil {
			slog.Warn("store: the words of the output index's partitions", "err", err)
		}
	}()
}

// makeMissing makes the filters missing below the partition open, newest first.
func (s *Store) makeMissing(ctx context.Context, open int64) error {
	pool, err := s.db.DB()
	if err != nil {
		return err
	}
	have, err := column[int64](ctx, pool, `SELECT id FROM output_search_parts`)
	if err != nil {
		return err
	}
	for part := open - 1; part >= 0; part-- {
		if !slices.Contains(have, part) {
			if err := makePartFilter(ctx, pool, part); err != nil {
				return err
			}
		}
	}
	return nil
}

// makePartFilter makes and stores the filter of one partition, unless its lists change
// meanwhile (the next search tries again).
func makePartFilter(ctx context.Context, pool *sql.DB, part int64) error {
	var before, after string
	if err := pool.QueryRowContext(ctx, partState, part, part).Scan(&before); err != nil {
		return err
	}
	terms, err := column[string](ctx, pool, partTerms, part)
	if err != nil {
		return err
	}
	if err := pool.QueryRowContext(ctx, partState, part, part).Scan(&after); err != nil || after != before {
		return err
	}
	f := bloom.NewWithEstimates(uint(max(len(terms), minWords)), wordsFalsePositives)
	for _, t := range terms {
		f.AddString(t)
	}
	blob, err := f.MarshalBinary()
	if err != nil {
		return err
	}
	made := sha256.Sum256([]byte(before))
	_, err = pool.ExecContext(ctx, partSave, part, hex.EncodeToString(made[:16]), blob, part, part, before)
	return err
}

// column returns the first column of query's rows.
func column[T any](ctx context.Context, pool *sql.DB, query string, vars ...any) ([]T, error) {
	rs, err := pool.QueryContext(ctx, query, vars...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var list []T
	for rs.Next() {
		var v T
		if err := rs.Scan(&v); err != nil {
			return nil, err
		}
		list = append(list, v)
	}
	return list, rs.Err()
}
