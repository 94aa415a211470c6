package task

import (
	"context"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"conch/shared"
)

// Attach stores data as a file for a prompt of the session to carry, named name (its last
// path part, from any system). Its type is read from the bytes (sniffType); what the
// uploader said it is is not trusted. The agent must take that type (its
// promptCapabilities): a file it cannot take is refused before it is stored.
func (s *Service) Attach(ctx context.Context, sessionID, name string, data []byte) (shared.Attachment, error) {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	if err := shared.CheckLength("name", name, shared.MaxAttachmentName); err != nil {
		return shared.Attachment{}, err
	}
	if name == "." || name == "/" || strings.TrimSpace(name) == "" {
		return shared.Attachment{}, shared.Errorf(shared.CodeInvalid, "name is required")
	}
	if len(data) == 0 {
		return shared.Attachment{}, shared.Errorf(shared.CodeInvalid, "the file is empty")
	}
	if len(data) > shared.MaxAttachmentBytes {
		return shared.Attachment{}, shared.Errorf(shared.CodeTooLarge, "a file is at most %d MiB", shared.MaxAttachmentBytes>>20)
	}
	sess, err := s.store.GetSession(ctx, sessionID)
	if err != nil {
		return shared.Attachment{}, err
	}
	mimeType := sniffType(data)
	if why := sess.PromptCapabilities.Refusal(mimeType); why != "" {
		return shared.Attachment{}, shared.Errorf(shared.CodeInvalid, "%s (%s): %s", name, mimeType, why)
	}
	return s.store.CreateAttachment(ctx, sessionID, name, mimeType, data)
}

// sniffType is a file's type as its bytes show it (the WHATWG sniffing rules), without
// parameters: an image of a type agents read, text that is UTF-8 (HTML and SVG are text
// here, never rendered), or any other type, sent as a blob.
func sniffType(data []byte) string {
	t, _, err := mime.ParseMediaType(http.DetectContentType(data))
	if err != nil || shared.IsText(t) && !utf8.Valid(data) {
		return "application/octet-stream"
	}
	return t
}
