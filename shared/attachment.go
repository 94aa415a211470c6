package shared

// Attachments: files a person sends with a prompt (ACP image and resource blocks). A
// message lists them as Attachment summaries; a body is fetched on open.

// Bounds of attachments, each refused with a 400 that names it.
const (
	MaxAttachmentBytes = 5 << 20 // one file
	MaxAttachments     = 4       // files per prompt
	// MaxPendingAttachments bounds the files a session holds uploaded but not yet sent.
	MaxPendingAttachments = 16
	MaxAttachmentName     = 255 // bytes of a file's name
	// MaxImportBytes bounds an archive imported in one request (POST /api/v1/tasks/import).
	MaxImportBytes = 32 << 20
)

// Attachment is a file sent with a prompt as a message lists it: MimeType is the type
// Conch found by reading the bytes, never the one the uploader claimed.
type Attachment struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	MimeType string `json:"mime_type"`
	Size     int    `json:"size"`
}

// PromptCapabilities are what an agent takes in a prompt besides text and resource
// links (ACP promptCapabilities).
type PromptCapabilities struct {
	Image           bool `json:"image,omitempty"`
	EmbeddedContext bool `json:"embedded_context,omitempty"`
}

// imageTypes are the image types sent as ACP image blocks: those every model reading
// images takes. An SVG is text (it may hold script), never an image here.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// IsImage reports whether a file of type mimeType goes to the agent as an image.
func IsImage(mimeType string) bool { return imageTypes[mimeType] }

// IsText reports whether a file of type mimeType is text (an embedded text resource).
func IsText(mimeType string) bool { return len(mimeType) > 5 && mimeType[:5] == "text/" }

// Refusal says why an agent with capabilities c cannot take a file of type mimeType, or
// "" when it can: an image needs image, any other file embeddedContext. A nil c is an
// agent that never said (it has not started yet, or predates the capability): it takes none.
func (c *PromptCapabilities) Refusal(mimeType string) string {
	switch {
	case IsImage(mimeType) && (c == nil || !c.Image):
		return "This agent takes no images."
	case !IsImage(mimeType) && (c == nil || !c.EmbeddedContext):
		return "This agent takes no files."
	}
	return ""
}
