package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// jsonBuffers hold encoded answers until fasthttp has copied them into its own pooled
// body buffer (SetBody copies; c.Send would keep the slice). c.JSON (json.Marshal) allocated every answer afresh: a page of 100
// messages is 40 KiB of garbage per request, and at 2 cores the collections it caused
// made the tail of the latency (docs/PERFORMANCE.md).
var jsonBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledJSON keeps the rare huge answer's buffer out of the pool.
const maxPooledJSON = 1 << 20

// sendJSON answers v as JSON: the same bytes and Content-Type as c.JSON, compressed over
// 1 KiB as the client accepts (lists are most of what a session page reads).
// answer encodes v with status, or answers err when there is one: the end of a handler
// that called server/task.
func (s *server) answer(c *fiber.Ctx, status int, v any, err error) error {
	if err != nil {
		return s.fail(c, err)
	}
	return sendJSON(c.Status(status), v)
}

func sendJSON(c *fiber.Ctx, v any) error {
	buf := jsonBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledJSON {
			buf.Reset()
			jsonBuffers.Put(buf)
		}
	}()
	// An Encoder writes its pooled encoding buffer to buf; json.Marshal copies it out.
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n")) // Encode ends with a newline; Marshal does not
	if name := encodingFor(c, len(body)); name != "" {
		c.Set(fiber.HeaderContentEncoding, name)
		body = compress(name, body)
	}
	c.Response().SetBody(body)
	return nil
}

// checkKeys walks the keys of body, valid JSON that decoded into a t, for what
// encoding/json lets through silently: a key given twice in one object (the decoder keeps
// the last, another reader the first) and a key that names a field only when letter case
// is ignored ({"title":"a","Title":"b"} fills title with "b"). Either way a body could say
// one thing to Conch and another to a proxy, a log or a person reading it.
func checkKeys(body []byte, t reflect.Type) error {
	type container struct {
		fields map[string]reflect.Type // a struct's, by exact name; nil: any key
		elem   reflect.Type            // of a map's or an array's values; nil: not known
		keys   map[string]bool         // given so far; nil for an array
		key    bool                    // the next token is a key
	}
	var open []*container
	next := t // the type of the next value
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end of a body decoded already
		}
		if n := len(open); n > 0 && open[n-1].key {
			if key, ok := tok.(string); ok {
				c := open[n-1]
				if c.keys[key] {
					return shared.Errorf(shared.CodeInvalid, "key %q appears twice", key)
				}
				next = c.elem
				if c.fields != nil {
					if next, ok = c.fields[key]; !ok {
						return unknownCase(key, c.fields)
					}
				}
				c.keys[key], c.key = true, false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			c := &container{keys: map[string]bool{}}
			if st := decodedAs(next, reflect.Struct); st != nil {
				c.fields = fieldsOf(st)
			} else if mt := decodedAs(next, reflect.Map); mt != nil {
				c.elem = mt.Elem()
			}
			open = append(open, c)
		case json.Delim('['):
			c := &container{}
			if at := decodedAs(next, reflect.Slice, reflect.Array); at != nil {
				c.elem = at.Elem()
			}
			open = append(open, c)
		case json.Delim('}'), json.Delim(']'):
			open = open[:len(open)-1]
		}
		// A value ended, or a container began: an object wants a key, an array its next value.
		if n := len(open); n > 0 {
			open[n-1].key, next = open[n-1].keys != nil, open[n-1].elem
		}
	}
}

// unknownCase is the refusal of a key that matches a field only without regard to case.
func unknownCase(key string, fields map[string]reflect.Type) error {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return shared.Errorf(shared.CodeInvalid, "unknown field %q; field names are case-sensitive: did you mean %q?", key, name)
		}
	}
	return shared.Errorf(shared.CodeInvalid, "unknown field %q", key)
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// decodedAs is t without pointers when it is of one of kinds and encoding/json decodes it
// field by field or element by element; nil otherwise (also for an Unmarshaler such as
// json.RawMessage, whose own decoding, if any, checks its keys).
func decodedAs(t reflect.Type, kinds ...reflect.Kind) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) || !slices.Contains(kinds, t.Kind()) {
		return nil
	}
	return t
}

// fieldsOf maps the JSON names of a struct's fields to their types as encoding/json names
// them: the tag's name or the Go name; an untagged embedded struct's fields promoted; of
// two fields with one name, the shallower.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	fields, depth := map[string]reflect.Type{}, map[string]int{}
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous || f.Anonymous && name == "" && decodedAs(f.Type, reflect.Struct) != nil {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if d, seen := depth[name]; !seen || len(f.Index) < d {
			fields[name], depth[name] = f.Type, len(f.Index)
		}
	}
	return fields
}
