package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

func msgAt(id string, created, updated int, content string) shared.Message {
	base := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	return shared.Message{ID: id, Content: content,
		CreatedAt: base.Add(time.Duration(created) * time.Second),
		UpdatedAt: base.Add(time.Duration(updated) * time.Second)}
}

func ids(t *timeline) string {
	var b []string
	for _, m := range t.all() {
		b = append(b, m.ID+"="+m.Content)
	}
	return strings.Join(b, " ")
}

func TestTimelineMerge(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]shared.Message
		want    string
	}{
		{
			name:    "a page then live additions",
			batches: [][]shared.Message{{msgAt("a", 1, 1, "1"), msgAt("b", 2, 2, "2")}, {msgAt("c", 3, 3, "3")}},
			want:    "a=1 b=2 c=3",
		},
		{
			name: "a re-list after a reconnect doubles nothing",
			batches: [][]shared.Message{
				{msgAt("a", 1, 1, "1"), msgAt("b", 2, 2, "2")},
				{msgAt("b", 2, 2, "2"), msgAt("c", 3, 3, "3"), msgAt("a", 1, 1, "1")},
			},
			want: "a=1 b=2 c=3",
		},
		{
			name: "an update replaces in place",
			batches: [][]shared.Message{
				{msgAt("a", 1, 1, "running")},
				{msgAt("a", 1, 5, "done")},
			},
			want: "a=done",
		},
		{
			name: "an older copy never replaces a newer one",
			batches: [][]shared.Message{
				{msgAt("a", 1, 5, "done")},
				{msgAt("a", 1, 1, "running")},
			},
			want: "a=done",
		},
		{
			name: "older pages and out-of-order arrivals are sorted by (created_at, id)",
			batches: [][]shared.Message{
				{msgAt("d", 4, 4, "4"), msgAt("e", 5, 5, "5")},
				{msgAt("b", 2, 2, "2"), msgAt("a", 2, 2, "1")},
				{msgAt("c", 3, 3, "3")},
			},
			want: "a=1 b=2 c=3 d=4 e=5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tl timeline
			for _, b := range tt.batches {
				tl.merge(b...)
			}
			if got := ids(&tl); got != tt.want {
				t.Fatalf("timeline %q, want %q", got, tt.want)
			}
			checkIndex(t, &tl)
		})
	}
}

func TestTimelineEnds(t *testing.T) {
	var tl timeline
	if tl.first() != "" || tl.last() != "" {
		t.Fatal("empty timeline has ends")
	}
	tl.merge(msgAt("b", 2, 2, ""), msgAt("a", 1, 1, ""))
	if tl.first() != "a" || tl.last() != "b" {
		t.Fatalf("ends %q %q, want a b", tl.first(), tl.last())
	}
}

func checkIndex(t *testing.T, tl *timeline) {
	t.Helper()
	n := 0
	for _, c := range tl.ordered() {
		for _, m := range c.msgs {
			if tl.at[m.ID] != c {
				t.Fatalf("%s indexed in the wrong chunk", m.ID)
			}
			n++
		}
	}
	if n != len(tl.at) {
		t.Fatalf("%d messages, %d indexed", n, len(tl.at))
	}
}

func TestTimelineOlderChunks(t *testing.T) {
	var tl timeline
	tl.merge(msgAt("e", 5, 5, "5"), msgAt("f", 6, 6, "6"))
	v0 := views(tl.older)
	tl.addOlder([]shared.Message{msgAt("d", 4, 4, "4"), msgAt("c", 3, 3, "3"), msgAt("e", 5, 5, "dup")})
	tl.addOlder([]shared.Message{msgAt("a", 1, 1, "1"), msgAt("b", 2, 2, "2")})
	tl.addOlder(nil) // an empty page adds no chunk
	if got := ids(&tl); got != "a=1 b=2 c=3 d=4 e=5 f=6" {
		t.Fatalf("timeline %q", got)
	}
	if len(tl.older) != 3 || tl.first() != "a" || tl.last() != "f" {
		t.Fatalf("%d chunks, first %q, last %q", len(tl.older), tl.first(), tl.last())
	}
	checkIndex(t, &tl)

	// A live message joins the newest chunk; an update stays in its own chunk and
	// changes only that chunk's version.
	v1 := views(tl.older)
	tl.merge(msgAt("g", 7, 7, "7"), msgAt("c", 3, 9, "3'"))
	v2 := views(tl.older)
	if got := ids(&tl); got != "a=1 b=2 c=3' d=4 e=5 f=6 g=7" {
		t.Fatalf("timeline %q", got)
	}
	if v2[0].Version == v1[0].Version || v2[1].Version == v1[1].Version || v2[2].Version != v1[2].Version {
		t.Fatalf("versions %+v -> %+v: only chunks 0 and 1 changed", v1, v2)
	}
	if v0[0].Version != v1[0].Version {
		t.Fatal("loading older messages changed the newest chunk")
	}
	// A message older than every chunk, arriving late, goes to the oldest.
	tl.merge(msgAt("0", 0, 0, "0"))
	if tl.at["0"] != tl.older[2] || tl.first() != "0" {
		t.Fatal("a late old message is not in the oldest chunk")
	}
	checkIndex(t, &tl)
}

func TestTimelineLiveChunks(t *testing.T) {
	var tl timeline
	for i := range chunkSize {
		tl.merge(msgAt(fmt.Sprintf("m%04d", i), i, i, ""))
	}
	if len(tl.newer) != 0 {
		t.Fatalf("%d live chunks before the first chunk is full", len(tl.newer))
	}
	firstChunk := views(tl.older)
	for i := chunkSize; i < 3*chunkSize+1; i++ {
		tl.merge(msgAt(fmt.Sprintf("m%04d", i), i, i, ""))
	}
	if len(tl.newer) != 3 || len(tl.newer[0].msgs) != chunkSize || len(tl.newer[2].msgs) != 1 {
		t.Fatalf("live chunks %d (sizes %d, %d)", len(tl.newer), len(tl.newer[0].msgs), len(tl.newer[len(tl.newer)-1].msgs))
	}
	if after := views(tl.older); after[0].Version != firstChunk[0].Version {
		t.Fatal("live messages changed the full first chunk")
	}
	// An update to an early message touches only its chunk; a late arrival that sorts
	// inside a full chunk still goes there, in order.
	v := views(tl.newer)
	tl.merge(msgAt("m0150", 150, 999, "updated"), msgAt("m0150b", 150, 150, "late"))
	w := views(tl.newer)
	if w[0].Version == v[0].Version || w[1].Version != v[1].Version || w[2].Version != v[2].Version {
		t.Fatalf("versions %+v -> %+v", v, w)
	}
	all := tl.all()
	for i := 1; i < len(all); i++ {
		if !before(all[i-1], all[i]) {
			t.Fatalf("out of order at %d: %s then %s", i, all[i-1].ID, all[i].ID)
		}
	}
	if tl.first() != "m0000" || tl.last() != fmt.Sprintf("m%04d", 3*chunkSize) || tl.len() != 3*chunkSize+2 {
		t.Fatalf("first %s last %s len %d", tl.first(), tl.last(), tl.len())
	}
	checkIndex(t, &tl)
}
