package acp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

// The client's file methods (fs/read_text_file, fs/write_text_file) reach only the
// session's working directory. Paths are resolved through an os.Root of that directory,
// so neither "..", nor a symlink that resolves outside it, nor one swapped in between a
// check and the use, reads or writes anything outside: such a request is refused with an
// error that says why, and nothing is read or written. What the agent's own commands
// may have put there is refused too before a byte is read: anything but a regular file
// (a FIFO would block forever), a file with hard links, a file over readFileLimit.

const (
	// readFileLimit bounds the file a request loads (a read, or a write for its diff);
	// readAnswerLimit the text a read answers, which travels to the agent in one line
	// (the SDK drops a connection on a line over 10 MiB).
	readFileLimit   = 64 << 20
	readAnswerLimit = 8 << 20
	// loadBudget bounds the bytes all file requests of all sessions hold at once: each
	// is within readFileLimit, but the SDK runs every request in a goroutine of its own,
	// so a hundred at once would hold a hundred files. Past it a request is refused, not
	// queued: the agent hears why and may ask again.
	loadBudget = 4 * readFileLimit
)

// root opens, as a root, the directory of roots (the session's directory, then the task's
// additional directories) that holds path, and returns the path relative to it.
func root(roots []string, path string) (*os.Root, string, error) {
	if len(roots) == 0 {
		return nil, "", fsError("the session has no directory")
	}
	if !filepath.IsAbs(path) {
		return nil, "", fsError("path %q is not absolute", path)
	}
	for _, dir := range roots {
		rel, ok := within(dir, path)
		if !ok { // the agent may name the directory by its resolved path
			if real, err := filepath.EvalSymlinks(dir); err == nil {
				rel, ok = within(real, path)
			}
		}
		if !ok {
			continue
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, "", fsError("the directory %s cannot be opened: %v", dir, err)
		}
		return root, rel, nil
	}
	if len(roots) > 1 {
		return nil, "", fsError("%s is outside the session's directory %s and the task's additional directories", path, roots[0])
	}
	return nil, "", fsError("%s is outside the session's directory %s", path, roots[0])
}

// within returns path relative to dir, when it is lexically inside it.
func within(dir, path string) (string, bool) {
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	return rel, err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// The errors a file request answers, by JSON-RPC code: a missing file is ACP's "Resource
// not found" (agents then create the file: Gemini CLI gives up on any other error when it
// checks whether a file exists), a request Conch refuses (outside the directory, not a
// regular file, too large) is "Invalid params", and what the system refuses (permission
// denied, the server busy) is "Internal error". The reason is in the message too, after
// the code's title: agents show the message and some read nothing else.
const (
	codeInvalidParams    = -32602
	codeInternal         = -32603
	codeResourceNotFound = -32002 // ACP's ErrorCode ResourceNotFound; the SDK has no helper for it
)

var codeTitles = map[int]string{codeInvalidParams: "Invalid params", codeInternal: "Internal error", codeResourceNotFound: "Resource not found"}

func requestError(code int, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	return &sdk.RequestError{Code: code, Message: codeTitles[code] + ": " + reason, Data: map[string]any{"error": reason}}
}

// fsError is a request Conch refuses, with the reason.
func fsError(format string, args ...any) error {
	return requestError(codeInvalidParams, format, args...)
}

// rootError turns what the root refused into words: a missing file, an escape through a
// symlink, a permission the system denies, or the failure itself.
func rootError(path string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return requestError(codeResourceNotFound, "%s does not exist", path)
	case errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes"):
		return fsError("%s resolves outside the session's directory", path)
	case errors.Is(err, fs.ErrPermission):
		return requestError(codeInternal, "%s: permission denied", path)
	}
	return requestError(codeInternal, "%s: %v", path, err)
}

// roots are the directories the agent's file requests may reach.
func (s *session) roots() []string { return append([]string{s.cwd}, s.dirs...) }

func (s *session) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	text, err := s.mach.ReadFile(ctx, FileRead{Roots: s.roots(), Path: p.Path, Line: p.Line, Limit: p.Limit})
	if err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// WriteTextFile writes inside the session's directory (creating missing directories)
// and records the change as a diff, like an edit the agent reports.
func (s *session) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	old, err := s.mach.WriteFile(ctx, FileWrite{Roots: s.roots(), Path: p.Path, Content: p.Content})
	if err != nil {
		return sdk.WriteTextFileResponse{}, err
	}
	s.rec.written(p.Path, old, p.Content)
	return sdk.WriteTextFileResponse{}, nil
}

func (l *local) ReadFile(_ context.Context, r FileRead) (string, error) {
	root, rel, err := root(r.Roots, r.Path)
	if err != nil {
		return "", err
	}
	defer root.Close()
	f, err := openFile(root, rel, os.O_RDONLY)
	if err != nil {
		return "", rootError(r.Path, err)
	}
	defer f.Close()
	data, release, err := l.load(r.Path, f)
	if err != nil {
		return "", err
	}
	defer release()
	if !utf8.Valid(data) {
		return "", fsError("%s is not UTF-8 text", r.Path)
	}
	i, j, err := lineRange(data, r.Line, r.Limit)
	if err != nil {
		return "", err
	}
	if j-i > readAnswerLimit {
		return "", fsError("the text asked for is %d bytes, over the %d one answer may carry: ask for fewer lines", j-i, readAnswerLimit)
	}
	return string(data[i:j]), nil
}

// openFile opens rel without waiting: a FIFO (or a device) would otherwise hold the
// request, and the thread under it, until a writer comes, and nothing ends that wait.
// O_NOCTTY: a terminal device must not become the server's controlling terminal.
func openFile(root *os.Root, rel string, flag int) (*os.File, error) {
	return root.OpenFile(rel, flag|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0o644)
}

// load checks what f is (fstat: the file opened, not a path that may have been swapped
// since) before it reads a byte: a regular file, of one link, within readFileLimit; then
// takes its size from the server's loadBudget and reads it whole. A second link may be a
// hard link the agent's command made to a file outside the session's directory, which
// os.Root cannot tell from the file itself. release gives the size back once the caller
// is done with the data.
func (l *local) load(path string, f *os.File) (data []byte, release func(), err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, rootError(path, err)
	}
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case !fi.Mode().IsRegular():
		return nil, nil, fsError("%s is not a regular file (%s)", path, fi.Mode().Type())
	case st != nil && st.Nlink > 1:
		return nil, nil, fsError("%s has %d hard links: a file with more than one may be a file outside the session's directory", path, st.Nlink)
	case fi.Size() > readFileLimit:
		return nil, nil, fsError("%s is %d bytes, over the %d a request may load", path, fi.Size(), readFileLimit)
	}
	size := fi.Size()
	if !l.loads.TryAcquire(size) {
		return nil, nil, requestError(codeInternal, "the server is loading %d MiB of files for agents, its most at once: ask for %s again when your other requests are answered", loadBudget>>20, path)
	}
	release = func() { l.loads.Release(size) }
	data = make([]byte, size)
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) { // EOF: it shrank since the stat
		release()
		return nil, nil, rootError(path, err)
	}
	return data[:n], release, nil
}

// lineRange is where, in text, limit lines from line (1-based) are; nil means from the
// first line, to the end. It only counts newlines: a file of millions of short lines
// costs no more memory than its bytes.
func lineRange(text []byte, line, limit *int) (i, j int, err error) {
	if line != nil && *line < 1 {
		return 0, 0, fsError("line must be 1 or more, not %d", *line)
	}
	if limit != nil && *limit < 0 {
		return 0, 0, fsError("limit must not be negative, not %d", *limit)
	}
	// after returns the position past n more lines from at (or the end).
	after := func(at, n int) int {
		for ; n > 0 && at < len(text); n-- {
			nl := bytes.IndexByte(text[at:], '\n')
			if nl < 0 {
				return len(text)
			}
			at += nl + 1
		}
		return at
	}
	if line != nil {
		i = after(0, *line-1)
	}
	j = len(text)
	if limit != nil {
		j = after(i, *limit)
	}
	return i, j, nil
}

// WriteFile writes in one open file from the check to the write: the old text, for the
// diff, is read from the file the new text then replaces, under the same checks as a read.
func (l *local) WriteFile(_ context.Context, p FileWrite) (*string, error) {
	root, rel, err := root(p.Roots, p.Path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if rel == "." {
		return nil, fsError("%s is the session's directory, not a file", p.Path)
	}
	var old *string
	f, err := openFile(root, rel, os.O_RDWR)
	if errors.Is(err, fs.ErrNotExist) {
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return nil, rootError(p.Path, err)
		}
		f, err = openFile(root, rel, os.O_RDWR|os.O_CREATE|os.O_EXCL)
	} else if err == nil {
		data, release, err := l.load(p.Path, f)
		if err != nil {
			f.Close()
			return nil, err
		}
		defer release()
		text := string(data)
		old = &text
	}
	if err != nil {
		return nil, rootError(p.Path, err)
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return nil, rootError(p.Path, err)
	}
	if _, err := f.WriteAt([]byte(p.Content), 0); err != nil {
		return nil, rootError(p.Path, err)
	}
	return old, nil
}
