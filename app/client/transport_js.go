package client

import (
	"context"
	"errors"
	"net/url"
	"syscall/js"

	"conch/shared"
)

// roundTrip calls the browser's fetch. Cancelling ctx aborts the request through its own
// AbortController, also while the body is being read (net/http in WASM cannot do that,
// and would add megabytes to app.wasm).
func (c *Client) roundTrip(ctx context.Context, method, url, ifNoneMatch, contentType string, body []byte) (answer, error) {
	abort := js.Global().Get("AbortController").New()
	opts := js.Global().Get("Object").New()
	opts.Set("method", method)
	opts.Set("signal", abort.Get("signal"))
	// A caller that holds a version revalidates it with If-None-Match, and a 304 reaches
	// it as a 304: nothing to decode or draw. The HTTP cache would keep a second copy of
	// every body, and hand the whole cached body back as a 200 after its own revalidation.
	opts.Set("cache", "no-store")
	headers := js.Global().Get("Object").New()
	if body != nil {
		headers.Set("Content-Type", contentType)
		if contentType == "application/json" {
			opts.Set("body", string(body))
		} else { // bytes as they are: a JS string of them would be their UTF-8 reading
			raw := js.Global().Get("Uint8Array").New(len(body))
			js.CopyBytesToJS(raw, body)
			opts.Set("body", raw)
		}
	}
	if ifNoneMatch != "" {
		headers.Set("If-None-Match", ifNoneMatch)
	}
	if c.token != "" {
		headers.Set("Authorization", "Bearer "+c.token)
	}
	opts.Set("headers", headers)
	r, err := await(ctx, abort, js.Global().Call("fetch", url, opts))
	if err != nil {
		return answer{}, err
	}
	var a answer
	if tag := r.Get("headers").Call("get", "ETag"); tag.Type() == js.TypeString {
		a.etag = tag.String()
	}
	a.offline = r.Get("headers").Call("get", shared.OfflineHeader).Equal(js.ValueOf("1"))
	text, err := await(ctx, abort, r.Call("text"))
	if err != nil {
		return answer{}, err
	}
	a.status, a.body = r.Get("status").Int(), []byte(text.String())
	if a.status == 401 && c.token == "" { // not net/http: it would add megabytes
		signedOut()
	}
	return a, nil
}

// signedOut sends the page to the sign-in page, which brings the person back here after:
// the sign-in or share link that let this page in has ended (an API call answered 401, or
// the WebSocket closed with shared.CloseSignedOut). Retrying could never succeed, and the
// person would see only errors.
func signedOut() {
	loc := js.Global().Get("location")
	next := loc.Get("pathname").String() + loc.Get("search").String()
	loc.Call("assign", "/login?next="+url.QueryEscape(next))
}

// await waits for a promise, aborting the request when ctx ends first.
func await(ctx context.Context, abort, promise js.Value) (js.Value, error) {
	type result struct {
		v   js.Value
		err error
	}
	done := make(chan result, 1)
	var then, catch js.Func
	settle := func(r result) {
		done <- r
		then.Release()
		catch.Release()
	}
	then = js.FuncOf(func(_ js.Value, args []js.Value) any {
		settle(result{v: args[0]})
		return nil
	})
	catch = js.FuncOf(func(_ js.Value, args []js.Value) any {
		settle(result{err: errors.New(args[0].Call("toString").String())})
		return nil
	})
	promise.Call("then", then, catch)
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		abort.Call("abort")
		return js.Value{}, ctx.Err()
	}
}

// wsBase is the WebSocket origin: the client's base, or the page's own origin.
func (c *Client) wsBase() string {
	if c.base != "" {
		return c.base
	}
	return js.Global().Get("location").Get("origin").String()
}
