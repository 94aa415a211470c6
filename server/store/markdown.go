package store

import (
	"slices"

	"gorm.io/gorm"

	"conch/server/markdown"
	"conch/shared"
)

// An agent's reply and the entries of its plan are markdown, parsed here once, when they
// are stored (metadata.markdown, each entry's markdown), so that neither the browser nor
// the server's prerender parses them on each view. Parsing runs before a write's
// transaction, never under its lock; it is linear in the text (server/markdown), at most
// MaxTextBytes for a reply, maxMessageBytes for a plan. A streamed reply is parsed again
// at each store of its text: at most once per flush interval of the recorder (1 s), each
// time linear in the text so far (at most MaxTextBytes, where the recorder starts a new
// message: 256 KiB of what agents write parse in about 80 ms, BenchmarkMarkdownReply).

// parsesMarkdown reports whether messages of this author and type carry markdown.
func parsesMarkdown(author shared.AuthorType, typ shared.MessageType) bool {
	return typ == shared.TypePlan || typ == shared.TypeMessage && author == shared.AuthorAgent
}

// withMarkdown returns md, bounded and with the markdown of content (a reply's) or of a
// plan's entries parsed, for a message that carries markdown; else md as it is.
func withMarkdown(author shared.AuthorType, typ shared.MessageType, content string, md *shared.Metadata) *shared.Metadata {
	switch {
	case !parsesMarkdown(author, typ):
		return md
	case typ == shared.TypePlan:
		return withPlan(md)
	}
	return withTree(md, parseReply(content))
}

// parseReply parses a reply's text as it will be stored (bounded).
func parseReply(content string) []shared.MarkdownNode {
	content, _ = bounded(content, nil)
	tree, _ := markdown.Parse(content, shared.MaxMarkdownBytes)
	return tree
}

// withTree returns a copy of md with tree as its markdown (nil for none and no other
// metadata).
func withTree(md *shared.Metadata, tree []shared.MarkdownNode) *shared.Metadata {
	if md == nil && tree == nil {
		return nil
	}
	var c shared.Metadata
	if md != nil {
		c = *md
	}
	c.Markdown = tree
	return &c
}

// withPlan returns md bounded, its entries' markdown parsed: their trees at most
// shared.MaxMarkdownBytes together.
func withPlan(md *shared.Metadata) *shared.Metadata {
	_, md = bounded("", md)
	if md == nil || len(md.Entries) == 0 {
		return md
	}
	c := *md
	c.Entries = slices.Clone(md.Entries)
	left := shared.MaxMarkdownBytes
	for i := range c.Entries {
		tree, n := markdown.Parse(c.Entries[i].Content, left)
		c.Entries[i].Markdown, left = tree, left-n
	}
	return &c
}

// parseStored parses the markdown of the replies and plans stored before the server
// parsed them (a schema step). It costs one parse of every reply and plan once.
func parseStored(tx *gorm.DB, _ *dialect) error {
	var batch []messageRow
	return tx.Select("id, author_type, type, content, metadata").
		Where("type = ? AND author_type = ? OR type = ?", string(shared.TypeMessage), string(shared.AuthorAgent), string(shared.TypePlan)).
		FindInBatches(&batch, 500, func(tx *gorm.DB, _ int) error {
			for _, r := range batch {
				m, err := r.message()
				if err != nil {
					return err
				}
				md := withMarkdown(m.AuthorType, m.Type, m.Content, m.Metadata)
				raw, err := encodeMetadata(md)
				if err != nil {
					return err
				}
				if raw == nil {
					continue
				}
				if err := tx.Model(&messageRow{}).Where("id = ?", r.ID).Update("metadata", raw).Error; err != nil {
					return err
				}
			}
			return nil
		}).Error
}
