package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"mime"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"conch/server/store"
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

// pages serves the UI's pages through ui, go-app's handler. A session page carries that
// session's newest messages (prerendered, and as its boot payload), so it is never answered
// from a cache: go-app's ETag names the build, not the messages, and private messages
// stay out of the browser's HTTP cache (the service worker keeps its own bounded copies,
// which signing out clears). Which page it is comes from the path go-app routes by (the
// adaptor hands it a request parsed from the request URI, so escapes are decoded), not
// from Fiber's raw path: /%73essions/ID is a session page too.
func (s *server) pages(ui fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		u, err := url.ParseRequestURI(string(c.Request().RequestURI()))
		if err == nil && !strings.HasPrefix(u.Path, "/sessions/") {
			return ui(c)
		}
		c.Request().Header.Del(fiber.HeaderIfNoneMatch)
		if err := ui(c); err != nil {
			return err
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

// Boot reads what the HTML of a session page carries (ui.BootFunc): the session and its
// newest limit messages, projected by the store like every list, read at now().
func Boot(st *store.Store, now func() time.Time) func(ctx context.Context, sessionID string, limit int) (shared.Boot, error) {
	return func(ctx context.Context, sessionID string, limit int) (shared.Boot, error) {
		at := now()
		sess, err := st.GetSession(ctx, sessionID)
		if err != nil {
			return shared.Boot{}, err
		}
		page, err := st.ListMessages(ctx, shared.ListRequest{SessionID: sessionID, Limit: &limit, Sort: shared.SortDesc})
		if err != nil {
			return shared.Boot{}, err
		}
		return shared.Boot{Session: sess, Messages: page, At: at}, nil
	}
}
