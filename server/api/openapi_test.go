package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"conch/server/internal/pgtest"
)

// The API tests check every request they send and every answer they get against
// openapi.json (env.do calls checkOpenAPI): an undocumented route, parameter, field or
// status fails the test that met it. TestMain then checks the other way: every documented
// operation was met by some test.

var (
	openAPIRouter routers.Router
	metMu         sync.Mutex
	met           = map[string]bool{} // "GET /api/v1/tasks"
)

func TestMain(m *testing.M) {
	// The audit's JSON lines are checked as text (each line is shared.AuditEvent by type).
	openapi3filter.RegisterBodyDecoder("application/jsonl", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/gzip", openapi3filter.FileBodyDecoder) // a task's archive
	doc, err := openapi3.NewLoader().LoadFromData(OpenAPI)
	if err == nil {
		err = doc.Validate(context.Background())
	}
	if err == nil {
		openAPIRouter, err = legacy.NewRouter(doc)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapi.json:", err)
		os.Exit(1)
	}
	code := pgtest.Main(m)
	// Only a whole run meets every route; a run narrowed with -run meets some.
	if f := flag.Lookup("test.run"); code == 0 && f != nil && f.Value.String() == "" {
		var unmet []string
		for path, item := range doc.Paths.Map() {
			for method := range item.Operations() {
				if key := method + " " + path; !met[key] {
					unmet = append(unmet, key)
				}
			}
		}
		if len(unmet) > 0 {
			sort.Strings(unmet)
			fmt.Fprintf(os.Stderr, "openapi.json documents operations no test met:\n  %s\n", strings.Join(unmet, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// checkOpenAPI validates one exchange. A request is checked only when the server took
// it (many tests send bad requests on purpose); the answer is always checked, errors
// included. An undocumented route may only be the API's own 404.
func checkOpenAPI(t testing.TB, method, target, body string, header http.Header, resp *http.Response, raw string) {
	t.Helper()
	if !strings.HasPrefix(target, "/api/") && !strings.HasPrefix(target, "/healthz") && !strings.HasPrefix(target, "/ws") {
		return // the UI, its files and sign-in are not part of the API
	}
	req := httptest.NewRequest(method, "http://127.0.0.1:8080"+target, strings.NewReader(body))
	req.Header = header.Clone()
	route, params, err := openAPIRouter.FindRoute(req)
	if err != nil {
		if resp.StatusCode == http.StatusNotFound && strings.Contains(raw, `"code":"not_found"`) {
			return
		}
		t.Errorf("openapi.json: %s %s (answered %d) is not documented: %v", method, target, resp.StatusCode, err)
		return
	}
	metMu.Lock()
	met[method+" "+route.Path] = true
	metMu.Unlock()
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}}
	if resp.StatusCode < 300 || resp.StatusCode == http.StatusNotModified {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			t.Errorf("openapi.json: the server took %s %s %s, which the document refuses: %v", method, target, body, err)
		}
	}
	answer, err := decoded(resp.Header.Get("Content-Encoding"), raw)
	if err != nil {
		t.Errorf("%s %s: a %s body that does not decode: %v", method, target, resp.Header.Get("Content-Encoding"), err)
		return
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
		Header: resp.Header, Body: io.NopCloser(bytes.NewReader(answer))}
	if resp.StatusCode == http.StatusNotModified {
		out.Body = io.NopCloser(bytes.NewReader(nil))
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("openapi.json: %s %s answered %d %s, which the document does not describe: %v", method, target, resp.StatusCode, raw, err)
	}
}

// decoded is an answer's body as sent before its Content-Encoding.
func decoded(encoding, raw string) ([]byte, error) {
	switch encoding {
	case "":
		return []byte(raw), nil
	case "gzip":
		zr, err := gzip.NewReader(strings.NewReader(raw))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	case "br":
		return io.ReadAll(brotli.NewReader(strings.NewReader(raw)))
	default:
		return nil, fmt.Errorf("unknown encoding %q", encoding)
	}
}

// The document is served as it is embedded, and lists the routes of the route table.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	got := e.expect(http.StatusOK, "GET", "/api/v1/openapi.json", "", nil)
	if got != string(OpenAPI) {
		t.Fatal("GET /api/v1/openapi.json is not the embedded document")
	}
	for _, r := range e.app.GetRoutes(true) {
		if !strings.HasPrefix(r.Path, "/api/v1/") || slices.Contains([]string{"HEAD"}, r.Method) {
			continue
		}
		path := r.Path
		for _, p := range r.Params {
			path = strings.Replace(path, ":"+p, "{"+p+"}", 1)
		}
		if !strings.Contains(got, `"`+path+`"`) {
			t.Errorf("route %s %s is missing from openapi.json", r.Method, path)
		}
	}
}
