package shared

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Visible returns s with every invisible format character (Unicode category Cf: the
// bidirectional controls U+202A–U+202E and U+2066–U+2069, zero-width spaces and joiners,
// the byte order mark, soft hyphens, tag characters) replaced by a visible marker such as
// ⟨U+202E⟩, so that text cannot display as something else: "x\u202e#gnp.tahc" shows as
// "x⟨U+202E⟩#gnp.tahc", not "xchat.png#". Everything else is kept. The UI applies it to
// what it shows where that enters a page: a message, a session and a tool call's content
// through their Visible methods, a command's output as it is parsed; stored text is never
// changed.
//
// One exception: a zero-width joiner between two pictographs joins them into one emoji
// (👩‍💻, ❤️‍🔥); it hides nothing there and is kept.
func Visible(s string) string {
	if strings.IndexFunc(s, isFormat) < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	runes := []rune(s)
	for i, r := range runes {
		joins := r == zwj && i > 0 && i+1 < len(runes) && pictograph(runes[i-1]) && pictograph(runes[i+1])
		if isFormat(r) && !joins {
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

const zwj = '\u200d'

func isFormat(r rune) bool { return unicode.Is(unicode.Cf, r) }

// pictograph reports a rune an emoji's joiner may stand beside: a symbol, the emoji
// presentation selector, or a skin tone.
func pictograph(r rune) bool {
	return unicode.Is(unicode.So, r) || r == '\ufe0f' || r >= 0x1F3FB && r <= 0x1F3FF
}

// Visible returns m as a page shows it: every text in it marked (Visible). The ids are
// kept as they came: a page never shows them, and sends some back (the option chosen).
func (m Message) Visible() Message {
	src := m.Content
	m.Content = Visible(m.Content)
	if m.Metadata == nil {
		return m
	}
	md := *m.Metadata
	md.Title, md.Kind, md.Author, md.AnsweredBy = Visible(md.Title), Visible(md.Kind), Visible(md.Author), Visible(md.AnsweredBy)
	md.Status, md.StopReason = ToolStatus(Visible(string(md.Status))), StopReason(Visible(string(md.StopReason)))
	md.Options = slices.Clone(md.Options)
	for i := range md.Options {
		o := &md.Options[i]
		o.Name, o.Kind = Visible(o.Name), Visible(o.Kind)
	}
	md.Attachments = slices.Clone(md.Attachments)
	for i := range md.Attachments { // a person's file names; ids and types are Conch's
		a := &md.Attachments[i]
		a.ID, a.Name, a.MimeType = Visible(a.ID), Visible(a.Name), Visible(a.MimeType)
	}
	md.SignIn = slices.Clone(md.SignIn)
	for i := range md.SignIn { // the command too: what a person reads is what gets typed
		si := &md.SignIn[i]
		si.ID, si.Name, si.Description, si.Command = Visible(si.ID), Visible(si.Name), Visible(si.Description), Visible(si.Command)
	}
	md.Entries = slices.Clone(md.Entries)
	for i := range md.Entries {
		e := &md.Entries[i]
		v := Visible(e.Content)
		e.Markdown = visibleMarkdown(e.Content, v, e.Markdown)
		e.Content, e.Priority, e.Status = v, Visible(e.Priority), Visible(e.Status)
	}
	md.Markdown = visibleMarkdown(src, m.Content, md.Markdown)
	if n := md.Normalized; n != nil {
		c := *n
		if sh := c.ShellExec; sh != nil {
			e := *sh
			e.Command, e.WorkDir, e.Output.Signal = Visible(e.Command), Visible(e.WorkDir), Visible(e.Output.Signal)
			c.ShellExec = &e
		}
		if tc := c.ToolContent; tc != nil {
			s := *tc
			s.Items = slices.Clone(s.Items)
			for i := range s.Items {
				it := &s.Items[i]
				it.Type, it.Path = Visible(it.Type), Visible(it.Path)
			}
			c.ToolContent = &s
		}
		md.Normalized = &c
	}
	if e := md.Elicitation; e != nil {
		md.Elicitation = e.visible()
	}
	m.Metadata = &md
	return m
}

// visible marks a question's texts; field names and option values are kept, as the
// answer sends them back.
func (e *Elicitation) visible() *Elicitation {
	c := *e
	c.URL, c.Host = Visible(c.URL), Visible(c.Host)
	c.Fields = slices.Clone(c.Fields)
	for i := range c.Fields {
		f := &c.Fields[i]
		f.Title, f.Description = Visible(f.Title), Visible(f.Description)
		f.Options = slices.Clone(f.Options)
		for j := range f.Options {
			f.Options[j].Title = Visible(f.Options[j].Title)
		}
	}
	return &c
}

// Visible returns s as a page shows it: every text in it marked (Visible), the ids of
// modes and config options and values kept as the agent sent them (a page sends them back).
func (s Session) Visible() Session {
	s.Agent, s.Cwd, s.Error, s.Runner = Visible(s.Agent), Visible(s.Cwd), Visible(s.Error), Visible(s.Runner)
	s.LastStopReason = StopReason(Visible(string(s.LastStopReason)))
	if s.Modes != nil {
		m := *s.Modes
		m.Available = slices.Clone(m.Available)
		for i := range m.Available {
			a := &m.Available[i]
			a.Name, a.Description = Visible(a.Name), Visible(a.Description)
		}
		s.Modes = &m
	}
	s.Commands = slices.Clone(s.Commands)
	for i := range s.Commands {
		c := &s.Commands[i]
		c.Name, c.Description, c.Hint = Visible(c.Name), Visible(c.Description), Visible(c.Hint)
	}
	s.ConfigOptions = slices.Clone(s.ConfigOptions)
	for i := range s.ConfigOptions {
		o := &s.ConfigOptions[i]
		o.Name, o.Description, o.Category = Visible(o.Name), Visible(o.Description), Visible(o.Category)
		o.Values = slices.Clone(o.Values)
		for j := range o.Values {
			v := &o.Values[j]
			v.Name, v.Description, v.Group = Visible(v.Name), Visible(v.Description), Visible(v.Group)
		}
	}
	if s.Usage != nil && s.Usage.Cost != nil {
		u, c := *s.Usage, *s.Usage.Cost
		c.Currency = Visible(c.Currency)
		u.Cost = &c
		s.Usage = &u
	}
	if s.Sandbox != nil {
		b := *s.Sandbox
		b.Dirs, b.Read, b.Hosts = visibleAll(b.Dirs), visibleAll(b.Read), visibleAll(b.Hosts)
		b.Home, b.Network = Visible(b.Home), Visible(b.Network)
		s.Sandbox = &b
	}
	return s
}

// visibleAll returns a copy of list with each text marked (Visible).
func visibleAll(list []string) []string {
	out := slices.Clone(list)
	for i, v := range out {
		out[i] = Visible(v)
	}
	return out
}

// Visible returns s as a page shows it: every text in it marked (Visible).
func (s ToolContentSnapshot) Visible() ToolContentSnapshot {
	s.Status = ToolStatus(Visible(string(s.Status)))
	s.Items = slices.Clone(s.Items)
	for i := range s.Items {
		it := &s.Items[i]
		it.Type, it.Path = Visible(it.Type), Visible(it.Path)
		it.OldText, it.NewText, it.Text = visiblePtr(it.OldText), visiblePtr(it.NewText), visiblePtr(it.Text)
		it.Hunks = slices.Clone(it.Hunks)
		for j := range it.Hunks {
			h := &it.Hunks[j]
			h.Lines = slices.Clone(h.Lines)
			for k := range h.Lines {
				h.Lines[k].Text = Visible(h.Lines[k].Text)
			}
		}
	}
	return s
}

func visiblePtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := Visible(*s)
	return &v
}

// visibleTree returns a markdown tree with Visible applied to its texts, and whether that
// changed any: a copy then, tree itself else.
func visibleTree(tree []MarkdownNode) ([]MarkdownNode, bool) {
	var out []MarkdownNode
	for i, n := range tree {
		v := n
		v.Text, v.Href, v.Lang = Visible(n.Text), Visible(n.Href), Visible(n.Lang)
		var changed bool
		v.Children, changed = visibleTree(n.Children)
		if out == nil && (changed || v.Text != n.Text || v.Href != n.Href || v.Lang != n.Lang) {
			out = slices.Clone(tree)
		}
		if out != nil {
			out[i] = v
		}
	}
	if out == nil {
		return tree, false
	}
	return out, true
}
