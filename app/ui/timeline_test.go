package ui

import (
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
	for _, m := range t.msgs {
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
			for i, m := range tl.msgs {
				if tl.at[m.ID] != i {
					t.Fatalf("index of %s is %d, want %d", m.ID, tl.at[m.ID], i)
				}
			}
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
