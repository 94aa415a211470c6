package store

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"conch/shared"

	"gorm.io/gorm"
)

// Search inside command output. output_search holds the kept text of each stream as
// documents, one a chunk (output.go), each from position start to stop in its stream,
// written indexBatch chunks at a time: by the flush that fills the last chunk of a batch
// (batches are aligned on the stream's chunks, so a flush knows from positions alone
// whether it ends one), in one statement, and the rest when the command finishes (and again,
// in place, if it grows after). Each statement that writes to the index costs a dozen
// pages whatever it holds (the documents' rows, the full-text segment, its directory and
// statistics), so a document per filled chunk tripled what a slow printer wrote per byte
// printed; by batches it costs that once per indexBatch chunks. A running command's newest
// bytes, up to indexBatch chunks, are found once its command ends or a batch fills. A word
// across two chunks is in neither document whole. Documents leave with the chunks the kept
// text leaves, and with their message. The database indexes them as it does
// message_search (dialect), SQLite in partitions of document ids, each with lists of its
// own, so that a search newest first reads a common word's list a partition at a time
// (dialect.outputParts, Store.searchParts).
//
// A document's body is its bytes made searchable byte for byte (searchable), so a hit's
// place in the body is its place in the stream: what is not text becomes filler, which
// both databases take for a space between words and a result leaves out.

// indexLines indexes text, the bytes of a stream from position at on, whose chunks start
// at base + k*chunkSize: each piece up to a chunk's end is one document, and the last
// piece, which does not reach its chunk's end, only when final.
func indexLines(tx *gorm.DB, messageID string, stream int, base, at int64, text []byte, final bool) error {
	var rows []string
	var vars []any
	for len(text) > 0 {
		end := base + ((at-base)/chunkSize+1)*chunkSize // of the chunk at is in
		piece := text[:min(end-at, int64(len(text)))]
		if at+int64(len(piece)) < end && !final {
			break
		}
		if body := searchable(piece); strings.IndexFunc(body, shared.IsWordRune) >= 0 {
			rows = append(rows, "(CAST(? AS BIGINT), CAST(? AS BIGINT), ?)")
			vars = append(vars, at, at+int64(len(piece)), body)
		}
		at, text = at+int64(len(piece)), text[len(piece):]
	}
	if len(rows) == 0 {
		return nil
	}
	// One statement for the documents of a write, the task's id read with them.
	if err := tx.Exec(`INSERT INTO output_search (message_id, task_id, stream, start, stop, body)
		SELECT m.id, m.task_id, CAST(? AS BIGINT), d.column1, d.column2, d.column3 FROM messages AS m, (VALUES `+strings.Join(rows, ", ")+`) AS d
		WHERE m.id = ? ON CONFLICT (message_id, stream, start) DO UPDATE SET stop = excluded.stop, body = excluded.body`,
		append(append([]any{stream}, vars...), messageID)...).Error; err != nil {
		return fmt.Errorf("index output: %w", err)
	}
	return nil
}

// indexBatch is how many chunks of a running command's stream are indexed at a time.
const indexBatch = 8

// batchStart is where the batch holding position p begins in a stream one of whose chunks
// starts at base (they all start at base + k*chunkSize): batches begin at the chunks whose
// k, counted from the one at the stream's position 0 or the first before it, is a multiple
// of indexBatch, wherever the chunks start.
func batchStart(base, p int64) int64 {
	const size = indexBatch * chunkSize
	r := (base%chunkSize + chunkSize) % chunkSize // where chunks start, from 0 on
	k := (p - r) / size
	if (p-r)%size < 0 {
		k--
	}
	return r + k*size
}

// indexAppended indexes the batches that fresh, appended after the newest chunk t, ends:
// from the batch t ends in to the last one fresh ends, reading the chunks of the first
// that are stored before t.
func indexAppended(tx *gorm.DB, t chunkRow, fresh string) error {
	from, to := batchStart(t.Start, t.end()), batchStart(t.Start, t.end()+int64(len(fresh)))
	if from == to {
		return nil
	}
	text, base, err := storedBefore(tx, t, max(from, t.KeptFrom))
	if err != nil {
		return err
	}
	text = append(append(text, t.Data...), fresh[:to-t.end()]...)
	at := max(from, t.KeptFrom, base)
	return indexLines(tx, t.MessageID, t.Stream, base, at, text[at-base:], false)
}

// storedBefore reads the bytes of t's stream from the chunk that holds position from up to
// t, and where they start.
func storedBefore(tx *gorm.DB, t chunkRow, from int64) ([]byte, int64, error) {
	if from >= t.Start {
		return nil, t.Start, nil
	}
	var rows []chunkRow
	if err := tx.Select(chunkColumns).Scopes(streamOf(t.MessageID, t.Stream)).
		Where("start > ? AND start < ? AND length(data) > 0", from-chunkSize, t.Start).
		Order("start").Find(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("index output: %w", err)
	}
	if len(rows) == 0 {
		return nil, t.Start, nil
	}
	var text []byte
	for _, r := range rows {
		text = append(text, r.Data...)
	}
	return text, rows[0].Start, nil
}

// dropIndexed deletes the documents of a stream that end before from, where its kept
// text now starts.
func dropIndexed(tx *gorm.DB, messageID string, stream int, from int64) error {
	return tx.Exec(`DELETE FROM output_search WHERE message_id = ? AND stream = ? AND stop <= ?`, messageID, stream, from).Error
}

// finishIndex indexes the rest of each stream of a finished command, from the batch its
// newest chunk ends in, and drops the documents its kept text has left.
func finishIndex(tx *gorm.DB, messageID string) error {
	for _, stream := range []int{streamStdout, streamStderr} {
		if err := finishStream(tx, messageID, stream); err != nil {
			return err
		}
	}
	return nil
}

// finishStream is finishIndex for one stream.
func finishStream(tx *gorm.DB, messageID string, stream int) error {
	var newest []chunkRow
	if err := tx.Select(chunkColumns).Scopes(streamOf(messageID, stream)).Where("length(data) > 0").
		Order("start DESC").Limit(1).Find(&newest).Error; err != nil {
		return fmt.Errorf("index output: %w", err)
	}
	if len(newest) == 0 {
		return nil
	}
	t := newest[0]
	from := max(batchStart(t.Start, t.end()), t.KeptFrom)
	text, base, err := storedBefore(tx, t, from)
	if err != nil {
		return err
	}
	text = append(text, t.Data...)
	at := max(from, base)
	if err := indexLines(tx, messageID, stream, base, at, text[at-base:], true); err != nil {
		return err
	}
	if err := dropIndexed(tx, messageID, stream, t.KeptFrom); err != nil {
		return fmt.Errorf("index output: %w", err)
	}
	return nil
}

// filler stands for each byte of output that is not text, in a document's body.
const filler = "\x01"

// searchable returns text as it is indexed and shown, with as many bytes: terminal escape
// sequences, control characters (but newline and tab), invalid UTF-8 and characters that
// do not print become filler, so no stored output can carry a NUL PostgreSQL refuses, or
// hide a word behind a colour.
func searchable(text []byte) string {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		c := text[i]
		n := 1
		switch {
		case c == 0x1b:
			n = escapeLength(text[i:])
		case c == '\n' || c == '\t' || c >= 0x20 && c < 0x7f:
			out = append(out, c)
			i++
			continue
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(text[i:])
			n = size
			if r != utf8.RuneError && unicode.IsPrint(r) {
				out = append(out, text[i:i+n]...)
				i += n
				continue
			}
		}
		out = append(out, strings.Repeat(filler, n)...)
		i += n
	}
	return string(out)
}

// escapeLength is how many bytes of b, which starts with ESC, an escape sequence takes,
// never past a newline: a control sequence (ESC [ … final byte), a string (ESC ] P _ ^ …
// to BEL or ESC \) or ESC and one character.
func escapeLength(b []byte) int {
	if len(b) < 2 || b[1] == '\n' {
		return 1
	}
	line := b
	if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
		line = b[:nl]
	}
	switch b[1] {
	case '[':
		for i := 2; i < len(line); i++ {
			if line[i] >= 0x40 && line[i] <= 0x7e {
				return i + 1
			}
		}
		return len(line)
	case ']', 'P', '_', '^':
		for i := 2; i < len(line); i++ {
			if line[i] == 0x07 {
				return i + 1
			}
			if line[i] == 0x1b && i+1 < len(line) && line[i+1] == '\\' {
				return i + 2
			}
		}
		return len(line)
	}
	if b[1] >= utf8.RuneSelf {
		return 1
	}
	return 2
}

// hitLine is the line of body (a document found by terms) that a result shows: the first
// that holds the most terms, bounded to lineLimit bytes around its first hit, with the
// words found marked; and where the line starts in body. A document is kilobytes of
// lines, and reading the words of each was most of the time an output search took, so the
// first line that holds every term ends the look (a common word's is near the top), and
// when a line and the terms are ASCII, a line without any term's first word in it, in any
// case, is passed over unread (a rare word's).
func hitLine(body string, terms []string) (int, []shared.SnippetPart) {
	want := termWords(terms)
	var firsts []string // the terms' first words in lower case, when they are ASCII
	if isASCII(strings.Join(terms, "")) {
		for _, words := range want {
			firsts = append(firsts, strings.ToLower(words[0]))
		}
	}
	mayHold := func(line string) bool {
		if firsts == nil || !isASCII(line) {
			return true
		}
		line = strings.ToLower(line) // no copy when it is in lower case already
		return slices.ContainsFunc(firsts, func(w string) bool { return strings.Contains(line, w) })
	}
	bestAt, best, bestScore := 0, "", -1
	var spans [][2]int
	for at := 0; at <= len(body) && bestScore < len(want); {
		line, _, _ := strings.Cut(body[at:], "\n")
		at += len(line) + 1
		if bestScore >= 0 && !mayHold(line) {
			continue
		}
		if spans = termsIn(line, want, spans[:0]); len(spans) > bestScore && strings.IndexFunc(line, shared.IsWordRune) >= 0 {
			bestAt, best, bestScore = at-len(line)-1, line, len(spans)
		}
	}
	marks := termsIn(best, want, nil)
	from, to, cut := 0, len(best), len(best) > lineLimit
	if cut {
		first := 0
		if len(marks) > 0 {
			first = marks[0][0]
		}
		from = max(first-lineLimit/3, 0)
		for from > 0 && !utf8.RuneStart(best[from]) {
			from++
		}
		to = min(from+lineLimit, len(best))
		for to < len(best) && !utf8.RuneStart(best[to]) {
			to--
		}
	}
	blank := func(i int) bool { return strings.ContainsRune(" \t"+filler, rune(best[i])) }
	for from < to && blank(from) {
		from++
	}
	for to > from && blank(to-1) {
		to--
	}
	var parts []shared.SnippetPart
	add := func(text string, hit bool) {
		if text = strings.ReplaceAll(text, filler, ""); text != "" {
			parts = append(parts, shared.SnippetPart{Text: text, Hit: hit})
		}
	}
	at := from
	if from > 0 && cut {
		add("…", false)
	}
	for _, m := range marks {
		if m[0] < at || m[1] > to {
			continue
		}
		add(best[at:m[0]], false)
		add(best[m[0]:m[1]], true)
		at = m[1]
	}
	add(best[at:to], false)
	if to < len(best) && cut {
		add("…", false)
	}
	return bestAt, parts
}

// lineLimit is the most bytes of a line a result shows.
const lineLimit = 200

// isASCII reports whether s is ASCII only: its words are then equal in any case (EqualFold)
// only when equal in lower case (ToLower), which some other characters are not.
func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// termWords splits each term into its words (a phrase has several), leaving out the terms
// without any.
func termWords(terms []string) [][]string {
	var want [][]string
	for _, t := range terms {
		if words := strings.FieldsFunc(t, func(r rune) bool { return !shared.IsWordRune(r) }); len(words) > 0 {
			want = append(want, words)
		}
	}
	return want
}

// termsIn appends to spans those of line that match the terms' words, word by word and in
// any case (a phrase: its words in a row), in order; a term found once counts once, as len
// tells.
func termsIn(line string, want [][]string, spans [][2]int) [][2]int {
	for _, words := range want {
		for from, to := nextWord(line, 0); from < len(line); from, to = nextWord(line, to) {
			end, ok := to, strings.EqualFold(line[from:to], words[0])
			for _, w := range words[1:] {
				if !ok {
					break
				}
				var f int
				f, end = nextWord(line, end)
				ok = f < len(line) && strings.EqualFold(line[f:end], w)
			}
			if ok {
				spans = append(spans, [2]int{from, end})
				break
			}
		}
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	return spans
}

// nextWord is where the first word of line at or after i starts and ends (len(line) twice
// when there is none).
func nextWord(line string, i int) (int, int) {
	for i < len(line) {
		r, n := utf8.DecodeRuneInString(line[i:])
		if shared.IsWordRune(r) {
			break
		}
		i += n
	}
	j := i
	for j < len(line) {
		r, n := utf8.DecodeRuneInString(line[j:])
		if !shared.IsWordRune(r) {
			break
		}
		j += n
	}
	return i, j
}

// indexOutputs indexes the outputs stored before output_search (a schema step), as they
// would have been as they came: the kept text of each stream, its last line pending while
// the command runs.
func indexOutputs(tx *gorm.DB, d *dialect) error {
	for _, stmt := range d.searchSchema("output_search", true, "") {
		if err := tx.Exec(stmt).Error; err != nil {
			return fmt.Errorf("create the output search index: %w", err)
		}
	}
	var commands []struct{ ID, Status string }
	if err := tx.Raw(`SELECT id, status FROM messages AS m WHERE type = ? AND EXISTS
		(SELECT 1 FROM shell_output_chunks AS c WHERE c.message_id = m.id) ORDER BY created_at, id`,
		string(shared.TypeToolExecute)).Scan(&commands).Error; err != nil {
		return err
	}
	for _, c := range commands {
		var rows []chunkRow
		if err := tx.Select(chunkColumns).Where("message_id = ?", c.ID).Order("stream, start").Find(&rows).Error; err != nil {
			return err
		}
		out, errs := keptOf(rows)
		for _, k := range []kept{out, errs} {
			from := k.from()
			for i, ch := range k {
				at := max(ch.Start, from)
				if at >= ch.end() {
					continue
				}
				final := i < len(k)-1 || shared.ToolStatus(c.Status).IsTerminal()
				if err := indexLines(tx, c.ID, ch.Stream, ch.Start, at, ch.Data[at-ch.Start:], final); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
