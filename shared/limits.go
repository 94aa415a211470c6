package shared

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits of what people and scripts send; each is refused with a 400 that names it.
const (
	MaxTitleBytes       = 500         // a task's title
	MaxDescriptionBytes = 64 << 10    // a task's description
	MaxPromptBytes      = OutputLimit // a prompt's content (256 KiB)
	// A task's additional directories: how many, and the bytes of each path (Linux's
	// PATH_MAX).
	MaxAdditionalDirectories = 8
	MaxPathBytes             = 4096
)

// CheckLength refuses a field longer than max bytes, or one that is not text (CheckText).
func CheckLength(field, value string, max int) error {
	if len(value) > max {
		return Errorf(CodeInvalid, "%s is longer than %s", field, byteCount(max))
	}
	return CheckText(field, value)
}

// CheckText refuses a field that is not text every store keeps as such: invalid UTF-8,
// or a NUL byte (PostgreSQL refuses both in a text column).
func CheckText(field, value string) error {
	if !utf8.ValidString(value) {
		return Errorf(CodeInvalid, "%s is not valid UTF-8", field)
	}
	if strings.IndexByte(value, 0) >= 0 {
		return Errorf(CodeInvalid, "%s contains a NUL character", field)
	}
	return nil
}

func byteCount(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
