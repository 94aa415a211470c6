package ui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// Files sent with a prompt. The prompt box holds the picked, dropped or pasted files as
// chips; they are uploaded when the prompt is sent (so a chip removed costs nothing),
// each once: a prompt sent again after a failure reuses what was uploaded.

// pendingFile is a file in the prompt box: the browser's File, and its id once uploaded.
type pendingFile struct {
	name     string
	mimeType string // as the browser guesses it from the name; the server reads the bytes
	size     int
	file     app.Value
	id       string
}

const takesNothing = "This agent takes no images or files."

// cannotTake is what the prompt box says of an agent that takes no images or no files
// ("" when it takes both).
func cannotTake(c *shared.PromptCapabilities) string {
	image, file := c.Refusal("image/png") != "", c.Refusal("text/plain") != ""
	switch {
	case image && file:
		return takesNothing
	case image:
		return "This agent takes no images."
	case file:
		return "This agent takes no files."
	}
	return ""
}

// attach adds files (a FileList) to the prompt box, refusing with the page's alert what
// the agent cannot take, what is too big, and files past the prompt's bound.
func (b *promptBox) attach(files app.Value) {
	caps := b.capabilities()
	var refused []string
	for i := range files.Length() {
		f := files.Index(i)
		pf := pendingFile{name: f.Get("name").String(), mimeType: f.Get("type").String(), size: f.Get("size").Int(), file: f}
		why := caps.Refusal(pf.mimeType)
		switch {
		case why != "":
		case pf.size > shared.MaxAttachmentBytes:
			why = fmt.Sprintf("over %d MB.", shared.MaxAttachmentBytes>>20)
		case pf.size == 0:
			why = "empty."
		case len(b.files) >= shared.MaxAttachments:
			why = "a prompt carries at most " + strconv.Itoa(shared.MaxAttachments) + " files."
		default:
			b.files = append(b.files, pf)
			continue
		}
		refused = append(refused, pf.name+": "+why)
	}
	why := ""
	if len(refused) > 0 {
		why = "Not attached: " + strings.Join(refused, " ")
	}
	b.host.say(why)
}

func (b *promptBox) onPick(ctx app.Context, _ app.Event) {
	input := ctx.JSSrc()
	b.attach(input.Get("files"))
	input.Set("value", "") // the same file may be picked again after its chip is removed
}

func (b *promptBox) onDrop(ctx app.Context, e app.Event) {
	e.PreventDefault()
	if dt := e.Get("dataTransfer"); dt.Truthy() && b.host.in().readOnly == "" {
		b.attach(dt.Get("files"))
	}
}

// onPaste takes the files of a paste (a screenshot); text pastes as usual.
func (b *promptBox) onPaste(ctx app.Context, e app.Event) {
	if cd := e.Get("clipboardData"); cd.Truthy() && cd.Get("files").Length() > 0 {
		e.PreventDefault()
		b.attach(cd.Get("files"))
	}
}

func (b *promptBox) pickFiles(app.Context, app.Event) {
	if in := app.Window().GetElementByID("attach-input"); in.Truthy() {
		in.Call("click")
	}
}

// attachButton is the button that picks files, with its hidden file input; none for an
// agent that takes no images nor files (attachRow says so).
func (b *promptBox) attachButton() app.UI {
	if cannotTake(b.capabilities()) == takesNothing {
		return nil
	}
	return app.Span().Class("attach").Body(
		app.Input().Type("file").ID("attach-input").Class("sr-only").Multiple(true).TabIndex(-1).
			Aria("hidden", "true").OnChange(b.onPick),
		disabled(app.Button().Type("button").Class("secondary", "attach-button"), b.pending != "").
			Title("Attach images or files (or drop or paste them on the prompt)").OnClick(b.pickFiles).Text("Attach"),
	)
}

// attachRow is the chips of the files to send, and what the agent cannot take.
func (b *promptBox) attachRow() app.UI {
	note := cannotTake(b.capabilities())
	if note == "" && len(b.files) == 0 {
		return nil
	}
	return app.Div().Class("attach-row").Body(
		app.Ul().Class("pending-files").Aria("label", "Files to send").Body(
			app.Range(b.files).Slice(func(i int) app.UI {
				f := b.files[i]
				return app.Li().Class("file-chip").Body(
					app.Span().Class("file-name").Title(attrText(f.name)).Text(f.name),
					app.Span().Class("file-size").Text(sizeLabel(f.size)),
					disabled(app.Button().Type("button").Class("remove"), b.pending != "").
						Aria("label", attrText("Remove "+f.name)).OnClick(b.removeFile(i)).Text("×"),
				)
			}),
		),
		app.If(note != "", func() app.UI { return app.Span().Class("attach-note").Text(note) }),
	)
}

// capabilities are what the session's agent takes in a prompt; nil when it never said.
func (b *promptBox) capabilities() *shared.PromptCapabilities {
	s := b.host.in().session
	if s == nil {
		return nil
	}
	return s.PromptCapabilities
}

func (b *promptBox) removeFile(i int) app.EventHandler {
	return func(app.Context, app.Event) {
		if i < len(b.files) {
			b.files = append(b.files[:i:i], b.files[i+1:]...)
		}
	}
}

// upload uploads the files not uploaded yet and returns every file's id, in order (""
// for those not uploaded when it failed).
func upload(c context.Context, sessionID string, files []pendingFile) ([]string, error) {
	ids := make([]string, len(files))
	for i, f := range files {
		if ids[i] = f.id; f.id != "" {
			continue
		}
		data, err := readFile(c, f.file)
		if err != nil {
			return ids, fmt.Errorf("%s: %w", f.name, err)
		}
		a, err := api.UploadAttachment(c, sessionID, f.name, data)
		if err != nil {
			return ids, fmt.Errorf("%s: %s", f.name, shared.ErrorMessage(err))
		}
		ids[i] = a.ID
	}
	return ids, nil
}

// readFile reads a browser File's bytes.
func readFile(c context.Context, file app.Value) ([]byte, error) {
	done := make(chan []byte, 1)
	file.Call("arrayBuffer").Then(func(buf app.Value) {
		u := app.Window().Get("Uint8Array").New(buf)
		data := make([]byte, u.Length())
		app.CopyBytesToGo(data, u)
		done <- data
	})
	select {
	case data := <-done:
		return data, nil
	case <-c.Done():
		return nil, c.Err()
	}
}

// SentFiles are the files a prompt carried, under its text: each opens on click, an
// image shown, text fetched and shown, anything else a download.
type SentFiles struct {
	app.Compo

	SessionID string
	Files     []shared.Attachment

	open int // 1 + the index of the open file; 0: none
	text string
	onDemand
}

// OnDismount aborts a fetch in flight.
func (s *SentFiles) OnDismount() { s.abort() }

func (s *SentFiles) toggle(i int) app.EventHandler {
	return func(ctx app.Context, _ app.Event) {
		s.abort()
		if s.open == i+1 {
			s.open = 0
			return
		}
		s.open, s.text = i+1, ""
		if a := s.Files[i]; shared.IsText(a.MimeType) {
			sid, id := s.SessionID, a.ID
			fetchOnDemand(&s.onDemand, ctx, "File",
				func(c context.Context) (string, error) { return api.AttachmentText(c, sid, id) },
				func(text string) { s.text = text })
		}
	}
}

func (s *SentFiles) Render() app.UI {
	return app.Div().Class("sent-files").Body(
		app.Div().Class("file-chips").Body(app.Range(s.Files).Slice(func(i int) app.UI {
			a := s.Files[i]
			return app.Button().Type("button").Class("file-chip").Aria("expanded", strconv.FormatBool(s.open == i+1)).
				Title(attrText(a.Name+" · "+a.MimeType)).OnClick(s.toggle(i)).Body(
				app.Span().Class("file-name").Text(a.Name),
				app.Span().Class("file-size").Text(sizeLabel(a.Size)),
			)
		})),
		app.If(s.open > 0 && s.open <= len(s.Files), func() app.UI { return s.body(s.Files[s.open-1]) }),
	)
}

func (s *SentFiles) body(a shared.Attachment) app.UI {
	url := api.AttachmentURL(s.SessionID, a.ID)
	switch {
	case shared.IsImage(a.MimeType):
		return app.A().Href(url).Target("_blank").Rel("noopener").Class("file-open").Body(
			app.Img().Src(url).Alt(attrText(a.Name)).Class("file-image"))
	case shared.IsText(a.MimeType) && s.err != "":
		return app.P().Class("file-open", "error").Text(s.err)
	case shared.IsText(a.MimeType) && s.loading:
		return app.P().Class("file-open", "loading").Text("Loading…")
	case shared.IsText(a.MimeType):
		return app.Pre().Class("file-open", "file-text").Text(s.text)
	}
	return app.P().Class("file-open").Body(app.A().Href(url).Attr("download", attrText(a.Name)).Text("Download " + a.Name))
}
