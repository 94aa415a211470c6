package main

import (
	"fmt"
	"slices"
	"strings"
)

// dist is one figure measured over repeated runs.
type dist []float64

func (d dist) sorted() []float64 { s := slices.Clone(d); slices.Sort(s); return s }

func (d dist) median() float64 {
	s := d.sorted()
	switch n := len(s); {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// format prints the median and, over several runs, the spread (min-max).
func (d dist) format(unit func(float64) string) string {
	if len(d) == 0 {
		return "-"
	}
	s := d.sorted()
	lo, hi := unit(s[0]), unit(s[len(s)-1])
	if lo == hi {
		return unit(d.median())
	}
	return fmt.Sprintf("%s (%s-%s)", unit(d.median()), lo, hi)
}

// ratio prints the medians' ratio a/b as "x1.23".
func ratio(a, b dist) string {
	if len(a) == 0 || b.median() == 0 {
		return "-"
	}
	return fmt.Sprintf("x%.2f", a.median()/b.median())
}

func count(v float64) string { return fmt.Sprintf("%.0f", v) }

func times(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.2fx", v)
	}
	return fmt.Sprintf("%.1fx", v)
}

func micros(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.1f ms", v/1000)
	}
	return fmt.Sprintf("%.0f us", v)
}

func bytesIEC(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", v/(1<<10))
	default:
		return fmt.Sprintf("%.0f B", v)
	}
}

func seconds(v float64) string { return fmt.Sprintf("%.2f s", v) }

// report is the Markdown document make bench writes.
type report struct{ b strings.Builder }

func (r *report) h(level int, title string) {
	fmt.Fprintf(&r.b, "\n%s %s\n\n", strings.Repeat("#", level), title)
}

func (r *report) p(format string, args ...any) {
	fmt.Fprintf(&r.b, format+"\n\n", args...)
}

func (r *report) code(text string) {
	fmt.Fprintf(&r.b, "```\n%s\n```\n\n", strings.TrimRight(text, "\n"))
}

func (r *report) table(header []string, rows [][]string) {
	r.b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		r.b.WriteString("---|")
	}
	r.b.WriteString("\n")
	for _, row := range rows {
		r.b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	r.b.WriteString("\n")
}

func (r *report) String() string { return r.b.String() }
