package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	"conch/shared"

	"github.com/coder/websocket"
)

// inlineProxy stands in front of a conch server and puts every shell command's output
// bodies back into the messages it relays (the REST list, the WebSocket message.list and
// message notifications): Conch as it would be without on-demand output, for the browser
// benchmark only. The UI decodes the bodies into nothing, but receives and parses them.
type inlineProxy struct {
	srv      *conch
	rp       *httputil.ReverseProxy
	mu       sync.Mutex
	cache    map[string]shared.ShellOutput // message id -> output
	maxFrame int                           // the largest WebSocket frame relayed to a browser
}

// largestFrame is the size of the largest WebSocket frame relayed so far.
func (p *inlineProxy) largestFrame() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxFrame
}

func newInlineProxy(srv *conch) (*inlineProxy, error) {
	target, err := url.Parse(srv.URL)
	if err != nil {
		return nil, err
	}
	p := &inlineProxy{srv: srv, rp: httputil.NewSingleHostReverseProxy(target), cache: map[string]shared.ShellOutput{}}
	p.rp.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, "/messages") || resp.StatusCode != http.StatusOK {
			return nil
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if raw, err = p.inlinePage(resp.Request.Context(), raw); err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		resp.ContentLength = int64(len(raw))
		resp.Header.Del("Content-Length")
		return nil
	}
	return p, nil
}

func (p *inlineProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ws" {
		p.relayWS(w, r)
		return
	}
	p.rp.ServeHTTP(w, r)
}

// relayWS joins the browser's WebSocket to one of its own to the server.
func (p *inlineProxy) relayWS(w http.ResponseWriter, r *http.Request) {
	// The browser is on this proxy's own origin; the server sees a script without one.
	in, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer in.CloseNow()
	in.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	out, err := p.srv.dialWS(ctx)
	if err != nil {
		return
	}
	defer out.close()
	go func() {
		defer cancel()
		for {
			typ, data, err := in.Read(ctx)
			if err != nil || out.conn.Write(ctx, typ, data) != nil {
				return
			}
		}
	}()
	for {
		typ, data, err := out.conn.Read(ctx)
		if err != nil {
			return
		}
		if data, err = p.inlineFrame(ctx, data); err != nil {
			return
		}
		p.mu.Lock()
		p.maxFrame = max(p.maxFrame, len(data))
		p.mu.Unlock()
		if err := in.Write(ctx, typ, data); err != nil {
			return
		}
	}
}

// inlineFrame puts the bodies into a message.list response or a message notification.
func (p *inlineProxy) inlineFrame(ctx context.Context, data []byte) ([]byte, error) {
	var env shared.Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, err
	}
	var err error
	switch {
	case env.Action == shared.ActionMessageList && env.Type == shared.EnvelopeResponse:
		env.Payload, err = p.inlinePage(ctx, env.Payload)
	case env.Action == shared.ActionMessageAdded || env.Action == shared.ActionMessageUpdated:
		env.Payload, err = p.inlineMessage(ctx, env.Payload)
	default:
		return data, nil
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(env)
}

func (p *inlineProxy) inlinePage(ctx context.Context, raw []byte) ([]byte, error) {
	var page map[string]json.RawMessage
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, err
	}
	var msgs []json.RawMessage
	if err := json.Unmarshal(page["messages"], &msgs); err != nil {
		return nil, err
	}
	for i, m := range msgs {
		var err error
		if msgs[i], err = p.inlineMessage(ctx, m); err != nil {
			return nil, err
		}
	}
	var err error
	if page["messages"], err = json.Marshal(msgs); err != nil {
		return nil, err
	}
	return json.Marshal(page)
}

func (p *inlineProxy) inlineMessage(ctx context.Context, raw []byte) ([]byte, error) {
	var m shared.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if shared.ShellOf(m) == nil {
		return raw, nil
	}
	p.mu.Lock()
	out, ok := p.cache[m.ID]
	p.mu.Unlock()
	// A finished command's output no longer changes; a running one is fetched each time.
	if !ok || !m.Metadata.Status.IsTerminal() {
		snap, err := p.srv.snapshot(ctx, m.SessionID, m.ID)
		if err != nil {
			return nil, err
		}
		out = snap.Output
		p.mu.Lock()
		p.cache[m.ID] = out
		p.mu.Unlock()
	}
	return inlined(raw, out)
}
