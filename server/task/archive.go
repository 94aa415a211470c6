package task

import (
	"context"
	"io"
	"regexp"
	"strings"

	"conch/server/store"
	"conch/shared"
)

// Export and import of a task (docs/API.md, "Export and import"); the archive's format is
// the store's (server/store/archive.go).

// ExportTask writes the task's archive to w: with secret-like strings replaced when
// redact is set (RedactSecrets), and with the audit entries that name the task for an
// admin alone, as the audit is an admin's to read. Call GetTask first: once w has bytes,
// an error can no longer be answered as a status.
func (s *Service) ExportTask(ctx context.Context, acc shared.Account, taskID string, redact bool, w io.Writer) error {
	o := store.ExportOptions{Audit: admin(acc)}
	if redact {
		o.Redact = RedactSecrets
	}
	return s.store.ExportTask(ctx, taskID, w, o)
}

// ImportTask stores the task an archive holds as a new task of acc's (Person), with its
// sessions closed: nothing in it runs.
func (s *Service) ImportTask(ctx context.Context, acc shared.Account, r io.Reader) (shared.Task, error) {
	task, err := s.store.ImportTask(ctx, r, store.ImportOptions{Owner: Person(acc), SniffType: sniffType})
	if err != nil {
		return shared.Task{}, err
	}
	s.events.TaskChanged(task.ID)
	task.MayEdit, task.MayShare = true, mayShare(acc, task)
	return task, nil
}

// Redacted is what a secret-like string becomes.
const Redacted = "[REDACTED]"

// secretPatterns are the shapes of API keys and tokens an export redacts: Conch's own
// access tokens (AccessTokenPrefix), and the common providers' keys, bearer tokens, JWTs
// and private keys. None matches a quote or a backslash, so JSON text stays valid. Each
// starts a word: after the start, a character of no word, or an escape of JSON text (\n,
// \t, ...), which is kept.
var secretPatterns = regexp.MustCompile(`(^|[^A-Za-z0-9_]|\\[nrtbf])(?:` + strings.Join([]string{
	AccessTokenPrefix + `[A-Z2-7]{26}`,                           // Conch (rand.Text)
	`sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}`,                       // OpenAI, Anthropic
	`gh[pousr]_[A-Za-z0-9]{36,}`, `github_pat_[A-Za-z0-9_]{22,}`, // GitHub
	`glpat-[A-Za-z0-9_-]{20,}`,                                      // GitLab
	`(?:AKIA|ASIA)[0-9A-Z]{16}\b`,                                   // AWS access key ids
	`AIza[0-9A-Za-z_-]{35}`,                                         // Google
	`xox[abprs]-[A-Za-z0-9-]{10,}`,                                  // Slack
	`eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`, // JWT
	`(?i:bearer) [A-Za-z0-9._~+/-]{20,}=*`,                          // Authorization: Bearer …
	`-----BEGIN[A-Z ]*PRIVATE KEY-----[^"]*?-----END[A-Z ]*PRIVATE KEY-----`,
}, "|") + ")")

// RedactSecrets replaces each secret-like string in s with Redacted.
func RedactSecrets(s string) string { return secretPatterns.ReplaceAllString(s, "${1}"+Redacted) }
