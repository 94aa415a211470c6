package shared

import "fmt"

// Limits of what people and scripts send; each is refused with a 400 that names it.
const (
	MaxTitleBytes       = 500         // a task's title
	MaxDescriptionBytes = 64 << 10    // a task's description
	MaxPromptBytes      = OutputLimit // a prompt's content (256 KiB)
)

// CheckLength refuses a field longer than max bytes.
func CheckLength(field, value string, max int) error {
	if len(value) > max {
		return Errorf(CodeInvalid, "%s is longer than %s", field, byteCount(max))
	}
	return nil
}

func byteCount(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
