package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"mime"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"conch/server/task"
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// wasmName is the UI binary; the build leaves its brotli and gzip copies beside it.
const wasmName = "app.wasm"

// assets serves the read-only /web/ files, each read and hashed once.
type assets struct {
	fsys  fs.FS
	mu    sync.Mutex
	files map[string]*asset // name -> file; nil entry: known to be absent
}

type asset struct {
	data []byte
	etag string
}

func newAssets(fsys fs.FS) *assets {
	return &assets{fsys: fsys, files: map[string]*asset{}}
}

func (a *assets) get(name string) (*asset, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if f, ok := a.files[name]; ok {
		if f == nil {
			return nil, fs.ErrNotExist
		}
		return f, nil
	}
	if a.fsys == nil {
		return nil, fs.ErrNotExist
	}
	data, err := fs.ReadFile(a.fsys, name)
	if errors.Is(err, fs.ErrNotExist) || (err != nil && isDir(a.fsys, name)) {
		a.files[name] = nil
		return nil, fs.ErrNotExist
	}
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	f := &asset{data: data, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	a.files[name] = f
	return f, nil
}

func isDir(fsys fs.FS, name string) bool {
	info, err := fs.Stat(fsys, name)
	return err == nil && info.IsDir()
}

// handleAsset serves /web/*. app.wasm goes out precompressed when the client accepts it.
// go-app fetches the same unversioned URLs after every update, so clients revalidate
// (no-cache) and get 304 while the ETag holds.
func (s *server) handleAsset(c *fiber.Ctx) error {
	name := c.Params("*")
	if name == "" || !fs.ValidPath(name) {
		return s.fail(c, errNoFile)
	}
	served, encoding := name, ""
	if name == wasmName {
		for _, enc := range []struct{ token, suffix string }{{"br", ".br"}, {"gzip", ".gz"}} {
			if !accepts(c.Get(fiber.HeaderAcceptEncoding), enc.token) {
				continue
			}
			if _, err := s.web.get(name + enc.suffix); err == nil {
				served, encoding = name+enc.suffix, enc.token
				break
			}
		}
		c.Vary(fiber.HeaderAcceptEncoding)
	}
	f, err := s.web.get(served)
	if errors.Is(err, fs.ErrNotExist) {
		return s.fail(c, errNoFile)
	} else if err != nil {
		return s.fail(c, err)
	}
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderETag, f.etag)
	if encoding != "" {
		c.Set(fiber.HeaderContentEncoding, encoding)
	}
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = fiber.MIMEOctetStream
	}
	c.Set(fiber.HeaderContentType, ctype)
	if strings.Contains(c.Get(fiber.HeaderIfNoneMatch), f.etag) {
		return c.SendStatus(fiber.StatusNotModified)
	}
	return c.Send(f.data)
}

var errNoFile = shared.Errorf(shared.CodeNotFound, "file not found")

// accepts reports whether an Accept-Encoding header admits coding (q > 0).
func accepts(header, coding string) bool {
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), coding) {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}

// pages serves the UI's pages through ui, go-app's handler. A page that shows data gets
// it here, loaded before the prerender through the checks of the API route that serves
// the same data (sessionBoot); the prerender takes it under a one-time key in the page's
// URL (shared.BootParam) and reads no store of its own, so no page can show what the API
// would not. A key in the request itself is dropped: only this function hands one out.
// Which page it is comes from the decoded path (/%73essions/ID is a session page too),
// as go-app routes by; where the two parse a path differently, the page gets no key and
// shows no data.
//
// A session page carries that session's newest messages (prerendered, and as its boot
// payload), so it is never answered from a cache: go-app's ETag names the build, not the
// messages, and private messages stay out of the browser's HTTP cache (the service
// worker keeps its own bounded copies, which signing out clears).
func (s *server) pages(ui fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		uri := c.Request().URI()
		uri.QueryArgs().Del(shared.BootParam)
		id, isSession := strings.CutPrefix(string(uri.Path()), "/sessions/")
		if !isSession || strings.HasSuffix(id, "/replay") { // a replay lists its messages itself
			c.Request().SetRequestURI(string(uri.RequestURI()))
			return ui(c)
		}
		boot, err := s.sessionBoot(c.UserContext(), id)
		key := s.boots.put(boot, err)
		defer s.boots.take(key)
		uri.QueryArgs().Set(shared.BootParam, key)
		c.Request().SetRequestURI(string(uri.RequestURI()))
		c.Request().Header.Del(fiber.HeaderIfNoneMatch)
		if err := ui(c); err != nil {
			return err
		}
		if shared.ErrorCode(err) == shared.CodeNotFound {
			c.Status(fiber.StatusNotFound) // the page says so too
		}
		c.Response().Header.Del(fiber.HeaderETag)
		c.Set(fiber.HeaderCacheControl, "no-store")
		// The page carries the newest page of messages: compressed like the list itself.
		if body := c.Response().Body(); len(c.Response().Header.Peek(fiber.HeaderContentEncoding)) == 0 {
			if name := encodingFor(c, len(body)); name != "" {
				c.Set(fiber.HeaderContentEncoding, name)
				c.Response().SetBodyRaw(compress(name, body))
			}
		}
		return nil
	}
}

// bootTimeout bounds the read of a session page's data: past it the page goes out
// without messages, and the app lists them itself once it runs.
const bootTimeout = 2 * time.Second

// sessionBoot is what the HTML of session id's page carries (ui.BootFunc): the session,
// its task and its newest messages, projected by the store like every list, read at now(). It
// asks what GET /api/v1/task-sessions/{id}/messages asks of the account (as).
func (s *server) sessionBoot(ctx context.Context, id string) (shared.Boot, error) {
	acc := accountFrom(ctx)
	if err := s.tasks.InScope(ctx, acc, shared.AuditEvent{SessionID: id}); err != nil {
		return shared.Boot{}, err
	}
	if err := task.Permits(acc, shared.RoleViewer); err != nil {
		return shared.Boot{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, bootTimeout)
	defer cancel()
	at := s.now()
	sess, err := s.store.GetSession(ctx, id)
	if err != nil {
		return shared.Boot{}, err
	}
	task, err := s.store.GetTask(ctx, sess.TaskID)
	if err != nil {
		return shared.Boot{}, err
	}
	limit := shared.BootMessages
	page, err := s.store.ListMessages(ctx, shared.ListRequest{SessionID: id, Limit: &limit, Sort: shared.SortDesc})
	if err != nil {
		return shared.Boot{}, err
	}
	return shared.Boot{Session: sess, Task: &task, Messages: page, At: at}, nil
}

// boots holds the data of the pages being prerendered, each under its one-time key.
type boots struct {
	mu sync.Mutex
	m  map[string]bootResult
}

type bootResult struct {
	boot shared.Boot
	err  error
}

func (b *boots) put(boot shared.Boot, err error) string {
	key := rand.Text()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]bootResult{}
	}
	b.m[key] = bootResult{boot, err}
	return key
}

// take returns the data under key and forgets it; an unknown key is not found.
func (b *boots) take(key string) (shared.Boot, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.m[key]
	if !ok {
		return shared.Boot{}, errNoBoot
	}
	delete(b.m, key)
	return r.boot, r.err
}

var errNoBoot = shared.Errorf(shared.CodeNotFound, "no data was loaded for this page")
