package store

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"conch/shared"
)

var (
	alice = shared.Account{ID: "acc-alice", Login: "alice"}
	bob   = shared.Account{ID: "acc-bob", Login: "bob"}
)

func sniff(b []byte) string { t, _, _ := strings.Cut(http.DetectContentType(b), ";"); return t }

// fillTask makes a task of alice's with every kind of body an archive carries: n messages in
// one session (prompts, replies, commands with output, diffs, errors, plans) and a second
// session with a prompt that carried two files, and what the agents cost. Every session
// ends closed, as an imported one is.
func fillTask(t testing.TB, s *Store, n int, secret string) shared.Task {
	t.Helper()
	ctx := context.Background()
	task, err := s.CreateTaskOn(ctx, "big task", "what it is for", "", "", "", alice)
	if err != nil {
		t.Fatal(err)
	}
	sess, err := s.CreateSession(ctx, task.ID, "shell", "/work")
	if err != nil {
		t.Fatal(err)
	}
	code := 1
	for done := 0; done < n; {
		batch := make([]NewMessage, 0, 1000)
		for ; done < n && len(batch) < cap(batch); done++ {
			nm := NewMessage{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeMessage,
				Content: fmt.Sprintf("reply %d with **markdown** and `code`", done)}
			switch done % 50 {
			case 0:
				nm.AuthorType, nm.Content = shared.AuthorUser, fmt.Sprintf("prompt %d: use %s", done, secret)
				nm.Metadata = &shared.Metadata{Author: "alice", ClientMessageID: fmt.Sprint("c", done)}
			case 10, 30:
				nm.Type, nm.Content = shared.TypeToolExecute, ""
				nm.Metadata = shellMeta(shared.StatusCompleted)
				nm.Metadata.Normalized.ShellExec.Command = fmt.Sprintf("make test-%d TOKEN=%s", done, secret)
				nm.Output = &shared.ShellOutput{Stdout: strings.Repeat(fmt.Sprintf("line %d ok\n", done), 40) + secret,
					Stderr: "warning\n", ExitCode: &code, StdoutTotalBytes: 100000}
			case 20:
				nm.Type, nm.Content = shared.TypeToolCall, "edit"
				nm.Metadata = &shared.Metadata{ToolCallID: "e", Title: "Edit a.go", Status: shared.StatusCompleted, Kind: "edit",
					Normalized: &shared.Normalized{Kind: shared.NormalizedToolContent}}
				nm.ToolContent = []shared.ToolContentItem{{Type: shared.ContentDiff, Path: "a.go", OldText: new("a\nb\n"), NewText: new("a\n" + secret + "\n")},
					{Type: shared.ContentText, Text: new("note")}}
			case 40:
				nm.AuthorType, nm.Type, nm.Content = shared.AuthorSystem, shared.TypeError, "it failed\nwith a long story"
			case 45:
				nm.Type, nm.Content = shared.TypePlan, ""
				nm.Metadata = &shared.Metadata{Entries: []shared.PlanEntry{{Content: "step *one*", Priority: "high", Status: "completed"}}}
			}
			batch = append(batch, nm)
		}
		if _, err := s.CreateMessages(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	files, err := s.CreateSession(ctx, task.ID, "shell", "/work")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetPromptCapabilities(ctx, files.ID, shared.PromptCapabilities{Image: true, EmbeddedContext: true}); err != nil {
		t.Fatal(err)
	}
	text, err := s.CreateAttachment(ctx, files.ID, "notes.txt", "text/plain", []byte("the key is "+secret+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00", 20))
	img, err := s.CreateAttachment(ctx, files.ID, "shot.png", "image/png", png)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := s.AddUserMessage(ctx, files.ID, "see these", "", "alice", text.ID, img.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{sess.ID, files.ID} {
		if _, err := s.SetSessionUsage(ctx, id, shared.Usage{ContextUsed: 10, ContextSize: 100, Cost: &shared.Cost{Amount: 0.25, Currency: "USD"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetSessionState(ctx, id, shared.SessionClosed, ""); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

// digest is a hash of everything a person can list or open of a task: the task as the list
// shows it, each session, every page of its messages and every body they offer, with ids
// named by their first appearance and the authors' logins left out (they are mapped).
func digest(t testing.TB, s *Store, taskID string) (string, []string) {
	t.Helper()
	ctx := context.Background()
	var h bytes.Buffer
	names := map[string]string{}
	name := func(id *string) {
		if _, ok := names[*id]; !ok {
			names[*id] = fmt.Sprint("#", len(names))
		}
		*id = names[*id]
	}
	write := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		h.Write(append(b, '\n'))
	}
	task, err := s.TaskSummary(ctx, taskID)
	if err != nil {
		t.Fatal(err)
	}
	sessions := task.Sessions
	task.ID, task.Owner, task.Description, task.CreatedAt, task.UpdatedAt, task.Sessions = "", "", "", time.Time{}, time.Time{}, nil
	write(task)
	for _, sess := range sessions {
		full, err := s.GetSession(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		realID := full.ID
		name(&full.ID)
		full.TaskID = ""
		write(full)
		for q := (shared.ListRequest{SessionID: realID, Limit: new(500)}); ; {
			page, err := s.ListMessages(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Messages {
				mid := m.ID
				name(&m.ID)
				name(&m.SessionID)
				m.TaskID = ""
				var atts []shared.Attachment
				if md := m.Metadata; md != nil {
					md.Author, md.AnsweredBy = "", ""
					atts = md.Attachments
					md.Attachments = nil
					for _, a := range atts {
						name(&a.ID)
						write(a)
					}
				}
				write(m)
				if se := shared.ShellOf(m); se != nil && se.Output.HasOutput {
					snap, err := s.GetShellOutput(ctx, realID, mid)
					if err != nil {
						t.Fatal(err)
					}
					snap.MessageID = ""
					write(snap)
				}
				if md := m.Metadata; md != nil && md.Normalized != nil && md.Normalized.ToolContent != nil {
					c, err := s.GetToolContent(ctx, realID, mid)
					if err != nil {
						t.Fatal(err)
					}
					c.MessageID = ""
					write(c)
				}
				for _, a := range atts { // their real ids: the loop above named copies
					body, err := s.GetAttachment(ctx, realID, a.ID)
					if err != nil {
						t.Fatal(err)
					}
					h.Write(body.Data)
				}
			}
			if !page.HasMore {
				break
			}
			q.After = page.Cursor
		}
	}
	sum := sha256.Sum256(h.Bytes())
	return hex.EncodeToString(sum[:]), strings.Split(h.String(), "\n")
}

// exportOf is the task's archive.
func exportOf(t testing.TB, s *Store, taskID string, o ExportOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.ExportTask(context.Background(), taskID, &b, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestArchiveRoundTrip: a task of 10,000 messages, exported and imported into a new
// database, lists and opens the same (ids aside), and is the importer's.
func TestArchiveRoundTrip(t *testing.T) {
	ctx := context.Background()
	from, _ := open(t, time.Millisecond)
	task := fillTask(t, from, 10000, "plain")
	archive := exportOf(t, from, task.ID, ExportOptions{Audit: true})
	t.Logf("archive of 10,000 messages: %d bytes", len(archive))

	to, _ := open(t, time.Millisecond)
	got, err := to.ImportTask(ctx, bytes.NewReader(archive), ImportOptions{Owner: bob, SniffType: sniff})
	if err != nil {
		t.Fatal(err)
	}
	want, wantLines := digest(t, from, task.ID)
	have, haveLines := digest(t, to, got.ID)
	if want != have {
		for i := range min(len(wantLines), len(haveLines)) {
			if wantLines[i] != haveLines[i] {
				t.Errorf("line %d:\n got %.2000s\nwant %.2000s", i, haveLines[i], wantLines[i])
				break
			}
		}
		t.Fatalf("the imported task lists differently: digest %s, exported %s", have, want)
	}
	if n := strings.Count(strings.Join(wantLines, "\n"), `"stdout":"line `); n != 400 {
		t.Errorf("the digest opened %d outputs, want 400", n)
	}
	// The imported outputs are searchable, as the exported ones are.
	found, err := to.Search(ctx, shared.SearchRequest{Query: "warning", Limit: 1}, EveryTask)
	if err != nil || len(found.Results) != 1 || found.Results[0].Output == nil || found.Results[0].TaskID != got.ID {
		t.Errorf("search of an imported output: %+v (%v)", found.Results, err)
	}
	if got.ID == task.ID || got.Owner != "bob" || got.Description != "what it is for\n\nImported; first written by alice." {
		t.Errorf("imported task = %+v", got)
	}
	page, err := to.ListMessages(ctx, shared.ListRequest{SessionID: mustSessions(t, to, got.ID)[0], Limit: new(1)})
	if err != nil {
		t.Fatal(err)
	}
	if m := page.Messages[0]; m.Metadata.Author != "bob" || page.Total != 10000 {
		t.Errorf("first message %+v of %d: want bob's prompt of 10000", m.Metadata, page.Total)
	}
}

func mustSessions(t testing.TB, s *Store, taskID string) []string {
	t.Helper()
	ids, err := s.TaskSessions(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

type entry struct {
	name string
	kind byte
	body string
}

// entriesOf reads an archive's entries.
func entriesOf(t *testing.T, archive []byte) []entry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out []entry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, entry{hdr.Name, hdr.Typeflag, string(b)})
	}
}

// archiveOf writes entries as an archive.
func archiveOf(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.kind, Mode: 0o644, Size: int64(len(e.body))}
		if e.kind == tar.TypeSymlink {
			hdr.Linkname, hdr.Size = "/etc/passwd", 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImportRefusesHostileArchives: each fault is refused as invalid, naming it, and
// nothing is stored.
func TestImportRefusesHostileArchives(t *testing.T) {
	ctx := context.Background()
	from, _ := open(t, time.Millisecond)
	good := entriesOf(t, exportOf(t, from, fillTask(t, from, 60, "plain").ID, ExportOptions{}))
	find := func(prefix string) int {
		for i, e := range good {
			if strings.HasPrefix(e.name, prefix) {
				return i
			}
		}
		t.Fatalf("no entry %s", prefix)
		return 0
	}
	with := func(change func([]entry) []entry) []byte {
		return archiveOf(t, change(slices.Clone(good)))
	}
	replace := func(prefix string, change func(entry) entry) []byte {
		return with(func(es []entry) []entry { i := find(prefix); es[i] = change(es[i]); return es })
	}
	drop := func(prefix string) []byte {
		return with(func(es []entry) []entry { return slices.Delete(es, find(prefix), find(prefix)+1) })
	}
	add := func(at string, e entry) []byte {
		return with(func(es []entry) []entry { return slices.Insert(es, find(at), e) })
	}
	output := good[find("outputs/")].name
	for _, tc := range []struct {
		name, want string
		archive    []byte
	}{
		{"not gzip", "not a gzip", []byte("PK\x03\x04 a zip")},
		{"path traversal", `"../../etc/cron.d/x" is no entry`, add("usage.jsonl", entry{"../../etc/cron.d/x", tar.TypeReg, "x"})},
		{"traversal inside a kind", "is no entry", add("usage.jsonl", entry{"outputs/../../x/stdout", tar.TypeReg, "x"})},
		{"unknown kind", `"notes.txt" is no entry`, add("usage.jsonl", entry{"notes.txt", tar.TypeReg, "x"})},
		{"a link", "not a regular file", add("usage.jsonl", entry{"attachments/a/b", tar.TypeSymlink, ""})},
		{"task before manifest", "comes before manifest.json", with(func(es []entry) []entry { es[0], es[1] = es[1], es[0]; return es })},
		{"another version", "version 9", replace("manifest.json", func(e entry) entry {
			e.body = strings.Replace(e.body, `"version":1`, `"version":9`, 1)
			return e
		})},
		{"unknown field", "unknown field", replace("messages/", func(e entry) entry {
			e.body = strings.Replace(e.body, `"seq":`, `"run":"rm -rf /","seq":`, 1)
			return e
		})},
		{"unknown message type", `has type "exec"`, replace("messages/", func(e entry) entry {
			e.body = strings.Replace(e.body, `"type":"message"`, `"type":"exec"`, 1)
			return e
		})},
		{"messages out of order", "out of order", replace("messages/", func(e entry) entry {
			lines := strings.SplitAfter(e.body, "\n")
			lines[0], lines[1] = lines[1], lines[0]
			e.body = strings.Join(lines, "")
			return e
		})},
		{"invalid UTF-8 output", "not valid UTF-8", replace(output, func(e entry) entry { e.body = "\xff\xfe"; return e })},
		{"an output twice", "there twice", add("usage.jsonl", good[find(output)])},
		{"an output of no message", "belongs to no message", add("usage.jsonl", entry{"outputs/nobody/stdout", tar.TypeReg, "x"})},
		{"a missing output", "is missing", drop(output)},
		{"no usage", "incomplete", drop("usage.jsonl")},
		{"a diff with hunks", "with hunks", replace("tool-contents/", func(e entry) entry {
			e.body = strings.Replace(e.body, `"path"`, `"hunks":[],"path"`, 1)
			return e
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			to, _ := open(t, time.Millisecond)
			_, err := to.ImportTask(ctx, bytes.NewReader(tc.archive), ImportOptions{Owner: bob, SniffType: sniff})
			if shared.ErrorCode(err) != shared.CodeInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import: %v; want invalid, saying %q", err, tc.want)
			}
			if tasks, err := to.ListTasks(ctx); err != nil || len(tasks) != 0 {
				t.Errorf("after a refused import: tasks %v, %v", tasks, err)
			}
			var rows int64
			if err := to.db.Model(&messageRow{}).Count(&rows).Error; err != nil || rows != 0 {
				t.Errorf("after a refused import: %d messages, %v", rows, err)
			}
		})
	}
	to, _ := open(t, time.Millisecond)
	if _, err := to.ImportTask(ctx, bytes.NewReader(archiveOf(t, good)), ImportOptions{Owner: bob, SniffType: sniff}); err != nil {
		t.Fatalf("the archive written again: %v", err)
	}
}

// TestExportRedacts: with Redact, no entry holds the secret (prompts, commands, outputs,
// diffs, text files), and the archive still imports, its sizes made from the redacted files.
func TestExportRedacts(t *testing.T) {
	ctx := context.Background()
	const secret = "SECRET-0123456789"
	from, _ := open(t, time.Millisecond)
	task := fillTask(t, from, 60, secret)
	plain := exportOf(t, from, task.ID, ExportOptions{})
	redacted := exportOf(t, from, task.ID, ExportOptions{Redact: strings.NewReplacer(secret, "[REDACTED]").Replace})
	count := func(archive []byte) (n int) {
		for _, e := range entriesOf(t, archive) {
			n += strings.Count(e.body, secret)
		}
		return n
	}
	if count(plain) < 5 || count(redacted) != 0 {
		t.Fatalf("the secret is %d times in the archive, %d times redacted", count(plain), count(redacted))
	}
	to, _ := open(t, time.Millisecond)
	got, err := to.ImportTask(ctx, bytes.NewReader(redacted), ImportOptions{Owner: bob, SniffType: sniff})
	if err != nil {
		t.Fatal(err)
	}
	_, lines := digest(t, to, got.ID)
	all := strings.Join(lines, "\n")
	if strings.Contains(all, secret) || !strings.Contains(all, "TOKEN=[REDACTED]") || !strings.Contains(all, `"new_text":"a\n[REDACTED]\n"`) {
		t.Errorf("the imported task still holds the secret, or lacks the redacted text")
	}
}

// TestImportLeavesNothingWaiting: a command still running and a permission request still
// pending when exported are cancelled when imported, in a closed session: nothing there
// would ever finish or answer them.
func TestImportLeavesNothingWaiting(t *testing.T) {
	ctx := context.Background()
	from, _ := open(t, time.Millisecond)
	sess := newSession(t, from)
	if _, err := from.CreateMessages(ctx, []NewMessage{
		{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypeToolExecute, Metadata: shellMeta(shared.StatusRunning),
			Output: &shared.ShellOutput{Stdout: "half"}},
		{SessionID: sess.ID, AuthorType: shared.AuthorAgent, Type: shared.TypePermissionRequest, Content: "May I?",
			Metadata: &shared.Metadata{ToolCallID: "p", Status: shared.StatusPending, Options: []shared.PermissionOption{{OptionID: "y", Name: "Yes", Kind: "allow_once"}}}},
	}); err != nil {
		t.Fatal(err)
	}
	to, _ := open(t, time.Millisecond)
	got, err := to.ImportTask(ctx, bytes.NewReader(exportOf(t, from, sess.TaskID, ExportOptions{})), ImportOptions{Owner: bob, SniffType: sniff})
	if err != nil {
		t.Fatal(err)
	}
	id := mustSessions(t, to, got.ID)[0]
	imported, err := to.GetSession(ctx, id)
	if err != nil || imported.State != shared.SessionClosed {
		t.Fatalf("imported session %+v, %v: want closed", imported, err)
	}
	page, err := to.ListMessages(ctx, shared.ListRequest{SessionID: id})
	if err != nil || len(page.Messages) != 2 {
		t.Fatalf("%d messages, %v", len(page.Messages), err)
	}
	for _, m := range page.Messages {
		if m.Metadata.Status != shared.StatusCancelled {
			t.Errorf("%s is %s, want cancelled", m.Type, m.Metadata.Status)
		}
	}
	if snap, err := to.GetShellOutput(ctx, id, page.Messages[0].ID); err != nil || snap.Output.Stdout != "half" {
		t.Errorf("the running command's output: %+v, %v", snap.Output, err)
	}
}
