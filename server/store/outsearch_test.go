package store

import (
	"context"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

// outputHits searches q and returns the output results, as "stream@offset: line".
func outputHits(t *testing.T, s *Store, q string, r Readable) []string {
	t.Helper()
	var got []string
	for _, res := range results(t, s, q, r) {
		if res.Output != nil {
			got = append(got, res.Output.Stream+"@"+itoa(res.Output.Offset)+": "+snippetText(res.Snippet))
		}
	}
	return got
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A command's output is found by the words of its lines, on both databases: the result
// is the line (colours and control bytes left out, the words marked), where it starts in
// its stream, and the command it is of; a finished command's last line without a newline
// too; only in the tasks the caller may read; gone with its command.
func TestSearchFindsOutputLines(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess, other := newSession(t, s), newSession(t, s)
	md := shellMeta(shared.StatusCompleted)
	md.Normalized.ShellExec.Command = "make check"
	stdout := "building\n\x1b[31merror\x1b[0m: disk \xff full on /dev/sda\x00\nok\n"
	cmd := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Metadata: md, Output: &shared.ShellOutput{Stdout: stdout, Stderr: "warning: flaky\nlast words",
			StdoutOffset: new(int64(0)), StderrOffset: new(int64(0))}})
	create(t, s, NewMessage{SessionID: other.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Metadata: shellMeta(shared.StatusCompleted), Output: &shared.ShellOutput{Stdout: "elsewhere disk\n"}})

	for q, want := range map[string][]string{
		"full DISK":   {"stdout@9: error: disk  full on /dev/sda"},
		`"disk full"`: {"stdout@9: error: disk  full on /dev/sda"}, // the invalid byte is not text
		"words":       {"stderr@15: last words"},
		"31m":         nil, // the colour is not text
		"check":       nil, // the command line is found as a message, not as output
		"building ok": {"stdout@0: building"},
	} {
		if got := outputHits(t, s, q, Readable{Tasks: []string{sess.TaskID}}); !slices.Equal(got, want) {
			t.Errorf("search %q found %q, want %q", q, got, want)
		}
	}
	page, err := s.Search(ctx, shared.SearchRequest{Query: "disk"}, Readable{Tasks: []string{sess.TaskID}})
	if err != nil || len(page.Results) != 1 {
		t.Fatalf("search disk: %+v (%v)", page, err)
	}
	res := page.Results[0]
	if res.MessageID != cmd.ID || res.SessionID != sess.ID || res.TaskID != sess.TaskID || res.Type != shared.TypeToolExecute ||
		!res.CreatedAt.Equal(cmd.CreatedAt) {
		t.Errorf("result %+v", res)
	}
	var marked []string
	for _, p := range res.Snippet {
		if p.Hit {
			marked = append(marked, p.Text)
		}
	}
	if !slices.Equal(marked, []string{"disk"}) {
		t.Errorf("marked %q, want disk", marked)
	}
	if got := outputHits(t, s, "disk", EveryTask); len(got) != 2 {
		t.Errorf("every task: %q", got)
	}
	if _, err := s.DeleteTask(ctx, sess.TaskID); err != nil {
		t.Fatal(err)
	}
	// Output handed over without positions ends at position 0.
	if got := outputHits(t, s, "disk", EveryTask); !slices.Equal(got, []string{"stdout@-15: elsewhere disk"}) {
		t.Errorf("after the task's deletion: %q", got)
	}
	ftsMatches(t, s, "output_search_fts", "disk", 1)
}

// A running command's output is found as its chunks fill (a line split across flushes is
// found whole), the rest once it finishes; the lines its kept text dropped are no longer
// found.
func TestOutputIndexFollowsTheFlushes(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	m := runningCommand(t, s, sess.ID)
	var stream string
	write := func(text string, status shared.ToolStatus) {
		t.Helper()
		stream += text
		from := max(len(stream)-shared.OutputLimit, 0)
		at := int64(from)
		u := Update{Output: &shared.ShellOutput{Stdout: stream[from:], StdoutOffset: &at, StderrOffset: new(int64),
			StdoutTotalBytes: int64(len(stream))}}
		if status != shared.StatusRunning {
			u.Metadata = shellMeta(status)
		}
		if _, _, err := s.UpdateMessage(ctx, m.ID, u); err != nil {
			t.Fatal(err)
		}
	}
	found := func(q string) bool { return len(outputHits(t, s, q, EveryTask)) > 0 }
	write("first li", shared.StatusRunning)
	write("ne here\nsecond\n", shared.StatusRunning)
	filler := strings.Repeat("filler words to push the head out\n", 100)
	for len(stream)+len(filler) < indexBatch*chunkSize {
		write(filler, shared.StatusRunning)
	}
	if found("first") || found("filler") {
		t.Error("output is found before its batch of chunks is full")
	}
	write(filler, shared.StatusRunning)
	if got := outputHits(t, s, "line", EveryTask); !slices.Equal(got, []string{"stdout@0: first line here"}) {
		t.Errorf("the line split across flushes: %q", got)
	}
	// Past the bound, in flushes of a few lines: the first lines leave the kept text.
	for range shared.OutputLimit/len(filler) + 2*trimStep/len(filler) + 2 {
		write(filler, shared.StatusRunning)
	}
	write("tail without newline", shared.StatusCompleted)
	for q, want := range map[string]bool{"first": false, "second": false, "tail": true, "push": true} {
		if found(q) != want {
			t.Errorf("found %q: %v, want %v", q, !want, want)
		}
	}
	if got := outputHits(t, s, "tail", EveryTask); !slices.Equal(got, []string{"stdout@" + itoa(int64(len(stream)-20)) + ": tail without newline"}) {
		t.Errorf("tail: %q", got)
	}
}

// Whatever the writes (random pieces, invalid bytes, escapes, streams that start over,
// windows that jump), the documents of a stream never overlap, each is the searchable form
// of the stream's bytes where it says, and once the command finishes they cover every word
// of the kept text.
func TestOutputIndexIsTheKeptText(t *testing.T) {
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	ctx := context.Background()
	for seed, tc := range []struct{ writes, most int }{{200, 40}, {120, 3000}, {5, 1 << 19}, {100, 9000}} {
		m := runningCommand(t, s, sess.ID)
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		writes := growingOutput(r, tc.writes, tc.most)
		for i, out := range writes {
			u := Update{Output: &out}
			last := i == len(writes)-1
			if last {
				u.Metadata = shellMeta(shared.StatusCompleted)
			}
			if _, _, err := s.UpdateMessage(ctx, m.ID, u); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
			stdout, stderr := keptOf(chunksOf(t, s, m.ID))
			for stream, k := range map[int]kept{streamStdout: stdout, streamStderr: stderr} {
				checkDocs(t, s, m.ID, stream, k, last)
			}
			if t.Failed() {
				t.Fatalf("case %d, write %d", seed, i)
			}
		}
	}
}

// checkDocs checks the documents of a stream against its kept text k.
func checkDocs(t *testing.T, s *Store, messageID string, stream int, k kept, finished bool) {
	t.Helper()
	var docs []struct {
		Start, Stop int64
		Body        string
	}
	if err := s.db.Raw("SELECT start, stop, body FROM output_search WHERE message_id = ? AND stream = ? ORDER BY start",
		messageID, stream).Scan(&docs).Error; err != nil {
		t.Fatal(err)
	}
	from := k.from()
	text := k.text(from)
	covered := make([]bool, len(text))
	for i, d := range docs {
		if i > 0 && d.Start < docs[i-1].Stop {
			t.Errorf("stream %d: documents [%d, %d) and [%d, %d) overlap", stream, docs[i-1].Start, docs[i-1].Stop, d.Start, d.Stop)
		}
		if d.Start < from {
			continue // of a stretch the kept text left, deleted with its chunks
		}
		if d.Stop > from+int64(len(text)) {
			t.Errorf("stream %d: document [%d, %d) past the kept text's end %d", stream, d.Start, d.Stop, from+int64(len(text)))
			continue
		}
		if want := searchable(text[d.Start-from : d.Stop-from]); d.Body != want {
			t.Errorf("stream %d: document at %d is %q, want %q", stream, d.Start, d.Body, want)
		}
		for p := d.Start; p < d.Stop; p++ {
			covered[p-from] = true
		}
	}
	if !finished {
		return
	}
	body := searchable(text)
	for p, c := range body {
		if shared.IsWordRune(c) && !covered[p] && !docStraddles(docs, from, from+int64(p)) {
			t.Errorf("stream %d: the word at %d (%q) is in no document", stream, from+int64(p), body[max(p-10, 0):min(p+10, len(body))])
			return
		}
	}
}

// docStraddles reports whether a document begins before the kept text (at from) and
// holds position p.
func docStraddles(docs []struct {
	Start, Stop int64
	Body        string
}, from, p int64) bool {
	for _, d := range docs {
		if d.Start < from && p < d.Stop {
			return true
		}
	}
	return false
}

// A page of a search that finds both messages and output documents merges them newest
// first, and its pages never repeat or skip one.
func TestSearchPagesMergeOutputs(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	var want []string
	for i := range 5 {
		m := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage, Content: "page me"})
		c := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
			Metadata: shellMeta(shared.StatusCompleted), Output: &shared.ShellOutput{Stdout: strings.Repeat("page line\n", i+1)}})
		want = append([]string{"output " + c.ID, "message " + m.ID}, want...)
	}
	for _, limit := range []int{1, 2, 3, 7, 50} {
		var got []string
		q := shared.SearchRequest{Query: "page", Limit: limit}
		for range 20 {
			page, err := s.Search(ctx, q, EveryTask)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Results {
				kind := "message "
				if r.Output != nil {
					kind = "output "
				}
				got = append(got, kind+r.MessageID)
			}
			if !page.HasMore {
				break
			}
			q.Cursor = page.Cursor
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages of %d gave %v, want %v", limit, got, want)
		}
	}
}

// Output documents spread over SQLite's partitions of the index (outputPartBits), some
// empty, are found newest first page after page, each once, and a rare word in the
// oldest; each partition keeps lists of its own, merged when the next begins, and
// deleting a command takes its documents out of the partitions they are in.
func TestSearchOutputsAcrossPartitions(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, time.Millisecond)
	sess := newSession(t, s)
	c := create(t, s, NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute,
		Metadata: shellMeta(shared.StatusCompleted), Output: &shared.ShellOutput{Stdout: "nothing here\n"}})
	const part = 1 << outputPartBits
	insert := func(id int64, body string) {
		t.Helper()
		if err := s.db.Exec(`INSERT INTO output_search (id, message_id, task_id, stream, start, stop, body) VALUES (?, ?, ?, 0, ?, ?, ?)`,
			id, c.ID, sess.TaskID, id*chunkSize, id*chunkSize+int64(len(body)), body).Error; err != nil {
			t.Fatal(err)
		}
	}
	var ids []int64 // newest first
	for _, first := range []int64{2, part - 2, 3*part + 5, 5*part - 1, 7 * part} {
		for id := first; id < first+3; id++ {
			body := "common word"
			switch {
			case id < 4:
				body += " rare Café"
			case id>>outputPartBits == 3:
				body += " third"
			}
			insert(id, body)
			ids = append([]int64{id}, ids...)
		}
	}
	found := func(q string, limit int) []int64 {
		var got []int64
		req := shared.SearchRequest{Query: q, Limit: limit}
		for range 20 {
			page, err := s.Search(ctx, req, EveryTask)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Results {
				if r.Output != nil {
					got = append(got, r.Output.Offset/chunkSize)
				}
			}
			if !page.HasMore {
				break
			}
			req.Cursor = page.Cursor
		}
		return got
	}
	for _, limit := range []int{1, 2, 4, 50} {
		if got := found("common", limit); !slices.Equal(got, ids) {
			t.Errorf("common in pages of %d: documents %v, want %v", limit, got, ids)
		}
	}
	for q, want := range map[string][]int64{"rare": {3, 2}, "café rare": {3, 2}, `"word rare"`: {3, 2}, `"rare word"`: nil,
		"third": {3*part + 7, 3*part + 6, 3*part + 5}, "nowhere": nil, "rare third": nil} {
		if got := found(q, 20); !slices.Equal(got, want) {
			t.Errorf("%s: documents %v, want %v", q, got, want)
		}
	}
	// On SQLite, a search asks only the newest partition and those whose words hold its
	// own: the words of a partition are made in the background once a search finds them
	// missing.
	pool, err := s.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	skipped := func(q string, want ...int64) {
		t.Helper()
		if !s.dialect.sqlite {
			return
		}
		terms, err := shared.SearchTerms(q)
		if err != nil {
			t.Fatal(err)
		}
		var top int64
		if err := pool.QueryRow(`SELECT MAX(id) >> ? FROM output_search`, outputPartBits).Scan(&top); err != nil {
			t.Fatal(err)
		}
		if _, err := s.partsWithout(ctx, pool, terms, top); err != nil {
			t.Fatal(err)
		}
		s.words.made.Wait()
		skip, err := s.partsWithout(ctx, pool, terms, top)
		if got := slices.Sorted(maps.Keys(skip)); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: the partitions skipped are %v (%v), want %v", q, got, err, want)
		}
	}
	skipped("rare", 1, 2, 3, 4, 5, 6)
	skipped("cafe", 1, 2, 3, 4, 5, 6) // as SQLite's index splits and folds it
	skipped("third rare", 0, 1, 2, 3, 4, 5, 6)
	skipped("nowhere", 0, 1, 2, 3, 4, 5, 6)
	skipped("common", 2, 6)
	// A document written again, or anew, in a partition before the newest drops its
	// partition's words, so it is found by its new words, which are in the words made next.
	if err := s.db.Exec(`UPDATE output_search SET body = 'common word rare late' WHERE id = 3`).Error; err != nil {
		t.Fatal(err)
	}
	insert(2*part+1, "fresh")
	if s.dialect.sqlite {
		var kept []int64
		if err := s.db.Raw(`SELECT id FROM output_search_parts ORDER BY id`).Scan(&kept).Error; err != nil || !slices.Equal(kept, []int64{1, 3, 4, 5, 6}) {
			t.Errorf("after the writes, partitions %v (%v) have words, want [1 3 4 5 6]", kept, err)
		}
		// Words made from lists that have changed since are not stored.
		if res, err := pool.Exec(partSave, 0, "old lists", []byte{}, 0, 0, "old lists"); err != nil {
			t.Fatal(err)
		} else if n, _ := res.RowsAffected(); n != 0 {
			t.Errorf("words of old lists stored: %d rows", n)
		}
	}
	for q, want := range map[string][]int64{"late": {3}, "fresh": {2*part + 1}, "rare": {3, 2}} {
		if got := found(q, 20); !slices.Equal(got, want) {
			t.Errorf("%s after the writes: documents %v, want %v", q, got, want)
		}
	}
	skipped("late", 1, 2, 3, 4, 5, 6)
	skipped("fresh", 0, 1, 3, 4, 5, 6)
	insert(9*part, "common word")
	skipped("late", 1, 2, 3, 4, 5, 6, 7, 8)
	if !s.dialect.sqlite {
		return
	}
	// After a bulk load, the words are made at once.
	if err := s.db.Exec(`DELETE FROM output_search_parts`).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.MakePartWords(ctx); err != nil {
		t.Fatal(err)
	}
	var made []int64
	if err := s.db.Raw(`SELECT id FROM output_search_parts ORDER BY id`).Scan(&made).Error; err != nil || !slices.Equal(made, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("words made for partitions %v (%v), want 0 to 8", made, err)
	}
	// Words that cannot be read leave their partition to be asked.
	if err := s.db.Exec(`UPDATE output_search_parts SET made = 'broken', words = x'00' WHERE id = 0`).Error; err != nil {
		t.Fatal(err)
	}
	if got := found("rare", 20); !slices.Equal(got, []int64{3, 2}) {
		t.Errorf("rare with the words of its partition broken: documents %v, want [3 2]", got)
	}
	// Each partition has lists of its own, the ones before the newest merged into one.
	var parts, merged int
	if err := s.db.Raw(`SELECT COUNT(DISTINCT level >> 10) FROM output_search_fts_segdir`).Scan(&parts).Error; err != nil || parts != 8 {
		t.Errorf("the index has lists in %d partitions (%v), want 8", parts, err)
	}
	if err := s.db.Raw(`SELECT COUNT(*) FROM output_search_fts_segdir WHERE level >> 10 < 9`).Scan(&merged).Error; err != nil || merged != 7 {
		t.Errorf("the 7 partitions before the newest have %d segments (%v), want one each", merged, err)
	}
	if err := s.db.Exec(`DELETE FROM messages WHERE id = ?`, c.ID).Error; err != nil {
		t.Fatal(err)
	}
	if err := s.db.Exec(`INSERT INTO output_search_fts (output_search_fts) VALUES ('integrity-check')`).Error; err != nil {
		t.Errorf("the index after the delete: %v", err)
	}
	if got := found("common", 50); len(got) != 0 {
		t.Errorf("common after the delete: documents %v, want none", got)
	}
}

// A result shows the first line that holds the most terms, its hits marked: a line that
// holds every term ends the look, one that holds fewer gives way to a later one with more.
func TestHitLineIsTheFirstWithTheMostTerms(t *testing.T) {
	marked := func(parts []shared.SnippetPart) string {
		var b strings.Builder
		for _, p := range parts {
			if p.Hit {
				p.Text = "[" + p.Text + "]"
			}
			b.WriteString(p.Text)
		}
		return b.String()
	}
	for _, c := range []struct {
		body  string
		terms []string
		at    int
		line  string
	}{
		{"w2 only\nw1 x\nW1 w2 y\nw1 w2 z\n", []string{"w1", "w2"}, 13, "[W1] [w2] y"},
		{"w1 then\nw1 w2\n", []string{"w1", "w2"}, 8, "[w1] [w2]"},
		{"w1 first\nw1 again\n", []string{"w1"}, 0, "[w1] first"},
		{"go build\ntest go\nrun go, test now", []string{"go test"}, 17, "run [go, test] now"},
		{"go build\ntest go", []string{"go test"}, 0, "go build"},
		{"\n\x01\x01\nabc w1", []string{"zzz"}, 4, "abc w1"},
		{"a\nb w1 c w2", []string{"w2", "w1"}, 2, "b [w1] c [w2]"},
		{"one\ntwo w90\nTHREE W9 four", []string{"w9"}, 12, "THREE [W9] four"},
		{"a b\nx \u212a1 y", []string{"k1"}, 4, "x [\u212a1] y"}, // the Kelvin sign is K in any case
	} {
		at, parts := hitLine(c.body, c.terms)
		if got := marked(parts); at != c.at || got != c.line {
			t.Errorf("hitLine(%q, %q) = %d %q, want %d %q", c.body, c.terms, at, got, c.at, c.line)
		}
	}
}

// BenchmarkHitLine finds the line of a result in a document of the search benchmark's kind
// (a chunk of 3,800 bytes, lines of 10 words drawn with Zipf's law): a word in most lines,
// two of them, and a word in one line near the end.
func BenchmarkHitLine(b *testing.B) {
	zipf := rand.NewZipf(rand.New(rand.NewPCG(3, 2)), 1.1, 1, 4999)
	var doc strings.Builder
	for doc.Len() < chunkSize-100 {
		for i := range 10 {
			if i > 0 {
				doc.WriteString(" ")
			}
			doc.WriteString("w" + strconv.FormatUint(zipf.Uint64()+1, 10))
		}
		doc.WriteString("\n")
	}
	body := doc.String() + "last line with w9999 in it\n"
	for _, terms := range [][]string{{"w1"}, {"w1", "w2"}, {"w9999"}} {
		b.Run(strings.Join(terms, "+"), func(b *testing.B) {
			for b.Loop() {
				hitLine(body, terms)
			}
		})
	}
}
