package worktree

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"conch/server/diff"
	"conch/shared"
)

// file is a changed file as git names it (raw bytes) with its summary.
type file struct {
	path, oldPath string
	shared.ChangedFile
}

// Changes summarizes what the worktree dir (on branch) changed since it left base: its
// commits and its uncommitted work, untracked files included (those .gitignore names
// excepted), file by file.
func Changes(ctx context.Context, dir, base, branch string) (shared.Changes, error) {
	c, _, err := changes(ctx, dir, base, branch)
	return c, err
}

func changes(ctx context.Context, dir, base, branch string) (shared.Changes, []file, error) {
	c := shared.Changes{Base: base, Branch: branch, Files: []shared.ChangedFile{}}
	head, err := git(ctx, dir, 0, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return c, nil, err
	}
	c.Head = strings.TrimSpace(string(head))
	baseRef := "refs/heads/" + base
	mb, err := git(ctx, dir, 0, nil, "merge-base", "--end-of-options", baseRef, "HEAD")
	if err != nil {
		return c, nil, shared.Errorf(shared.CodeConflict, "the branch has no commit in common with %s any more", base)
	}
	c.MergeBase = strings.TrimSpace(string(mb))
	counts, err := git(ctx, dir, 0, nil, "rev-list", "--left-right", "--count", "--end-of-options", baseRef+"...HEAD")
	if err != nil {
		return c, nil, err
	}
	if f := strings.Fields(string(counts)); len(f) == 2 {
		c.Behind, _ = strconv.Atoi(f[0])
		c.Ahead, _ = strconv.Atoi(f[1])
	}
	files, err := diffFiles(ctx, dir, c.MergeBase)
	if err != nil {
		return c, nil, err
	}
	for _, f := range files {
		c.Files = append(c.Files, f.ChangedFile)
	}
	return c, files, nil
}

// diffFiles lists the files that differ between commit and the work tree. Untracked
// files are marked "intent to add" in a copy of the worktree's index, so that one diff
// sees them as added (and pairs them with deleted ones as renames) while the agent's
// own index is never touched.
func diffFiles(ctx context.Context, dir, commit string) ([]file, error) {
	index, err := indexCopy(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer os.Remove(index)
	withIndex := []string{"GIT_INDEX_FILE=" + index}
	if _, err := git(ctx, dir, 0, withIndex, "add", "--intent-to-add", "--all"); err != nil {
		return nil, err
	}
	names, err := git(ctx, dir, 0, withIndex, "diff", "--no-ext-diff", "--no-textconv", "-z", "-M", "--name-status", "--end-of-options", commit)
	if err != nil {
		return nil, err
	}
	nums, err := git(ctx, dir, 0, withIndex, "diff", "--no-ext-diff", "--no-textconv", "-z", "-M", "--numstat", "--end-of-options", commit)
	if err != nil {
		return nil, err
	}
	files := parseNameStatus(string(names))
	counts := parseNumstat(string(nums))
	for i := range files {
		n, ok := counts[files[i].path]
		if !ok {
			continue
		}
		if n[0] < 0 {
			files[i].Binary = true
		} else {
			files[i].AddedLines, files[i].RemovedLines = n[0], n[1]
		}
	}
	return files, nil
}

// indexCopy copies the worktree's index to a temporary file (an empty one when it has none).
func indexCopy(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, 0, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp("", "conch-index-*")
	if err != nil {
		return "", err
	}
	defer tmp.Close()
	src, err := os.Open(strings.TrimSuffix(string(out), "\n"))
	if err == nil {
		defer src.Close()
		_, err = io.Copy(tmp, src)
	} else if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// parseNameStatus reads `git diff -z --name-status`: "M\0path\0", "R087\0old\0new\0".
func parseNameStatus(out string) []file {
	var files []file
	f := strings.Split(out, "\x00")
	for i := 0; i+1 < len(f); {
		code := f[i]
		var x file
		if code == "" {
			break
		}
		switch code[0] {
		case 'R':
			if i+2 >= len(f) {
				return files
			}
			x.oldPath, x.path, i = f[i+1], f[i+2], i+3
			x.Status = shared.FileRenamed
		default:
			x.path, i = f[i+1], i+2
			x.Status = map[byte]string{'A': shared.FileAdded, 'D': shared.FileDeleted}[code[0]]
			if x.Status == "" {
				x.Status = shared.FileModified
			}
		}
		x.Path = strings.ToValidUTF8(x.path, "\uFFFD")
		if x.oldPath != "" {
			x.OldPath = strings.ToValidUTF8(x.oldPath, "\uFFFD")
		}
		files = append(files, x)
	}
	return files
}

// parseNumstat reads `git diff -z --numstat` into added and removed lines by (new) path;
// -1 for a binary file. A rename is "a\tr\t\0old\0new\0".
func parseNumstat(out string) map[string][2]int {
	counts := map[string][2]int{}
	f := strings.Split(out, "\x00")
	for i := 0; i < len(f); i++ {
		parts := strings.SplitN(f[i], "\t", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if path == "" && i+2 < len(f) {
			path, i = f[i+2], i+2
		}
		a, errA := strconv.Atoi(parts[0])
		r, errR := strconv.Atoi(parts[1])
		if errA != nil || errR != nil {
			a, r = -1, -1
		}
		counts[path] = [2]int{a, r}
	}
	return counts
}

// Diff is the change of one file the summary lists (by its path as listed) with both
// texts: the old from the merge base, the new from the work tree as it is. A side over
// shared.DiffSideLimit omits both. A path the summary does not list is CodeNotFound.
func Diff(ctx context.Context, dir, base, branch, path string) (shared.FileDiff, error) {
	c, files, err := changes(ctx, dir, base, branch)
	if err != nil {
		return shared.FileDiff{}, err
	}
	for _, f := range files {
		if f.Path != path {
			continue
		}
		d := shared.FileDiff{File: f.ChangedFile}
		if f.Binary {
			return d, nil
		}
		if f.Status != shared.FileAdded {
			old := f.path
			if f.oldPath != "" {
				old = f.oldPath
			}
			text, err := git(ctx, dir, shared.DiffSideLimit, nil, "cat-file", "blob", c.MergeBase+":"+old)
			if errors.Is(err, errTooLarge) {
				return shared.FileDiff{File: f.ChangedFile, Omitted: true}, nil
			} else if err != nil {
				return shared.FileDiff{}, err
			}
			s := string(text)
			d.OldText = &s
		}
		if f.Status != shared.FileDeleted {
			text, err := readWorktree(dir, f.path)
			if errors.Is(err, errTooLarge) {
				return shared.FileDiff{File: f.ChangedFile, Omitted: true}, nil
			} else if err != nil {
				return shared.FileDiff{}, err
			}
			d.NewText = &text
		}
		d.Hunks, d.HunksTruncated = diff.Hunks(d.OldText, d.NewText)
		return d, nil
	}
	return shared.FileDiff{}, shared.Errorf(shared.CodeNotFound, "file not changed")
}

// readWorktree reads a file of the work tree as git sees it (a symbolic link is its
// target's name), never following a link out of the work tree: the agent may have
// swapped a directory for a link since git listed the file.
func readWorktree(dir, path string) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	fi, err := root.Lstat(path)
	if err != nil {
		return "", err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return root.Readlink(path)
	}
	if fi.Size() > shared.DiffSideLimit {
		return "", errTooLarge
	}
	f, err := root.Open(filepath.FromSlash(path))
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, shared.DiffSideLimit+1))
	if err != nil {
		return "", err
	}
	if len(b) > shared.DiffSideLimit {
		return "", errTooLarge
	}
	return string(b), nil
}
