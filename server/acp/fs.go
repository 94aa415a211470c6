package acp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

// The client's file methods (fs/read_text_file, fs/write_text_file) reach only the
// session's working directory. Paths are resolved through an os.Root of that directory,
// so neither "..", nor a symlink that resolves outside it, nor one swapped in between a
// check and the use, reads or writes anything outside: such a request is refused with an
// error that says why, and nothing is read or written.

const (
	// readFileLimit bounds the file a read loads; readAnswerLimit the text it answers,
	// which travels to the agent in one line (the SDK drops a connection on a line over
	// 10 MiB).
	readFileLimit   = 64 << 20
	readAnswerLimit = 8 << 20
)

// inCwd opens the session's directory as a root and returns the path relative to it.
func (s *session) inCwd(path string) (*os.Root, string, error) {
	if !filepath.IsAbs(path) {
		return nil, "", fsError("path %q is not absolute", path)
	}
	rel, ok := within(s.cwd, path)
	if !ok { // the agent may name the directory by its resolved path
		if real, err := filepath.EvalSymlinks(s.cwd); err == nil {
			rel, ok = within(real, path)
		}
	}
	if !ok {
		return nil, "", fsError("%s is outside the session's directory %s", path, s.cwd)
	}
	root, err := os.OpenRoot(s.cwd)
	if err != nil {
		return nil, "", fsError("the session's directory cannot be opened: %v", err)
	}
	return root, rel, nil
}

// within returns path relative to dir, when it is lexically inside it.
func within(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	return rel, err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// fsError is a refusal the agent reads: invalid params with the reason.
func fsError(format string, args ...any) error {
	return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf(format, args...)})
}

// rootError turns what the root refused into words: an escape through a symlink, a
// missing file, or the failure itself.
func rootError(path string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fsError("%s does not exist", path)
	case errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes"):
		return fsError("%s resolves outside the session's directory", path)
	}
	return fsError("%s: %v", path, err)
}

func (s *session) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	root, rel, err := s.inCwd(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		return sdk.ReadTextFileResponse{}, rootError(p.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return sdk.ReadTextFileResponse{}, rootError(p.Path, err)
	case !fi.Mode().IsRegular():
		return sdk.ReadTextFileResponse{}, fsError("%s is not a regular file", p.Path)
	case fi.Size() > readFileLimit:
		return sdk.ReadTextFileResponse{}, fsError("%s is %d bytes, over the %d a read may load", p.Path, fi.Size(), readFileLimit)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return sdk.ReadTextFileResponse{}, rootError(p.Path, err)
	}
	if !utf8.Valid(data) {
		return sdk.ReadTextFileResponse{}, fsError("%s is not UTF-8 text", p.Path)
	}
	text, err := lineRange(string(data), p.Line, p.Limit)
	if err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	if len(text) > readAnswerLimit {
		return sdk.ReadTextFileResponse{}, fsError("the text asked for is %d bytes, over the %d one answer may carry: ask for fewer lines", len(text), readAnswerLimit)
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// lineRange is limit lines of text from line (1-based); nil means from the first line,
// to the end.
func lineRange(text string, line, limit *int) (string, error) {
	if line == nil && limit == nil {
		return text, nil
	}
	start := 1
	if line != nil {
		if *line < 1 {
			return "", fsError("line must be 1 or more, not %d", *line)
		}
		start = *line
	}
	if limit != nil && *limit < 0 {
		return "", fsError("limit must not be negative, not %d", *limit)
	}
	lines := strings.SplitAfter(text, "\n")
	if start > len(lines) {
		return "", nil
	}
	lines = lines[start-1:]
	if limit != nil && *limit < len(lines) {
		lines = lines[:*limit]
	}
	return strings.Join(lines, ""), nil
}

// WriteTextFile writes inside the session's directory (creating missing directories)
// and records the change as a diff, like an edit the agent reports.
func (s *session) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	root, rel, err := s.inCwd(p.Path)
	if err != nil {
		return sdk.WriteTextFileResponse{}, err
	}
	defer root.Close()
	if rel == "." {
		return sdk.WriteTextFileResponse{}, fsError("%s is the session's directory, not a file", p.Path)
	}
	var old *string
	switch data, err := root.ReadFile(rel); {
	case err == nil:
		text := string(data)
		old = &text
	case !errors.Is(err, fs.ErrNotExist):
		return sdk.WriteTextFileResponse{}, rootError(p.Path, err)
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return sdk.WriteTextFileResponse{}, rootError(p.Path, err)
	}
	if err := root.WriteFile(rel, []byte(p.Content), 0o644); err != nil {
		return sdk.WriteTextFileResponse{}, rootError(p.Path, err)
	}
	s.rec.written(p.Path, old, p.Content)
	return sdk.WriteTextFileResponse{}, nil
}
