package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"conch/server/runner"
	"conch/shared"
)

var update = flag.Bool("update", false, "write openapi.json from openapi.in.json and the shared types")

// The schemas of openapi.json that the shared types define, by name. Their shape (fields,
// types, which are required: those without omitempty) comes from the type; openapi.in.json
// adds only what a type cannot say: descriptions, enums, bounds, examples.
var generated = map[string]any{
	"Error":                  shared.ErrorBody{},
	"WSError":                shared.Error{},
	"Agent":                  shared.Agent{},
	"Task":                   shared.Task{},
	"Session":                shared.Session{},
	"Message":                shared.Message{},
	"Metadata":               shared.Metadata{},
	"MessagePage":            shared.MessagePage{},
	"AddMessage":             shared.AddRequest{},
	"Normalized":             shared.Normalized{},
	"ShellExec":              shared.ShellExec{},
	"ShellOutput":            shared.ShellOutput{},
	"ShellOutputSummary":     shared.ShellOutputSummary{},
	"ShellOutputSnapshot":    shared.ShellOutputSnapshot{},
	"Envelope":               shared.Envelope{},
	"SessionRef":             shared.SessionRef{},
	"ListRequest":            shared.ListRequest{},
	"PermissionOption":       shared.PermissionOption{},
	"PermissionAnswer":       shared.PermissionAnswer{},
	"Elicitation":            shared.Elicitation{},
	"ElicitationField":       shared.ElicitationField{},
	"ElicitationOption":      shared.ElicitationOption{},
	"ElicitationAnswer":      shared.ElicitationAnswer{},
	"ToolContentItem":        shared.ToolContentItem{},
	"ToolContentItemSummary": shared.ToolContentItemSummary{},
	"ToolContentSummary":     shared.ToolContentSummary{},
	"ToolContentSnapshot":    shared.ToolContentSnapshot{},
	"ErrorDetail":            shared.ErrorDetail{},
	"PlanEntry":              shared.PlanEntry{},
	"SignInMethod":           shared.SignInMethod{},
	"Fork":                   shared.Fork{},
	"MarkdownNode":           shared.MarkdownNode{},
	"SessionMode":            shared.SessionMode{},
	"Modes":                  shared.Modes{},
	"Command":                shared.Command{},
	"ModeRequest":            shared.ModeRequest{},
	"ConfigOption":           shared.ConfigOption{},
	"ConfigValue":            shared.ConfigValue{},
	"ConfigRequest":          shared.ConfigRequest{},
	"Changes":                shared.Changes{},
	"ChangedFile":            shared.ChangedFile{},
	"FileDiff":               shared.FileDiff{},
	"Repository":             shared.Repository{},
	"AttemptsRequest":        shared.AttemptsRequest{},
	"Attempt":                shared.Attempt{},
	"AttemptList":            shared.AttemptList{},
	"KeepRequest":            shared.KeepRequest{},
	"Account":                shared.Account{},
	"NewAccount":             shared.NewAccount{},
	"Invitation":             shared.Invitation{},
	"AccessToken":            shared.AccessToken{},
	"NewAccessToken":         shared.NewAccessToken{},
	"NewRunnerToken":         shared.NewRunnerToken{},
	"Runner":                 shared.Runner{},
	"RunnerList":             shared.RunnerList{},
	"AuditEvent":             shared.AuditEvent{},
	"ShareLink":              shared.ShareLink{},
	"NewShareLink":           shared.NewShareLink{},
	"Review":                 shared.Review{},
	"ReviewComment":          shared.ReviewComment{},
	"Usage":                  shared.Usage{},
	"Cost":                   shared.Cost{},
	"UsageDay":               shared.UsageDay{},
	"UsageTask":              shared.UsageTask{},
	"UsageReport":            shared.UsageReport{},
	"SearchPage":             shared.SearchPage{},
	"SearchResult":           shared.SearchResult{},
	"SnippetPart":            shared.SnippetPart{},
	"Attachment":             shared.Attachment{},
	"PromptCapabilities":     shared.PromptCapabilities{},
	"PushSubscription":       shared.PushSubscription{},
	"PushKeys":               shared.PushKeys{},
	"PushSubscribed":         shared.PushSubscribed{},
	"PushUnsubscribe":        shared.PushUnsubscribe{},
	"PushServerKey":          shared.PushServerKey{},
	"AgentSession":           shared.AgentSession{},
	"AgentSessionPage":       shared.AgentSessionPage{},
	"ImportAgentSessions":    shared.ImportAgentSessions{},
	"ImportedSessions":       shared.ImportedSessions{},
}

// openAPIDocument is openapi.in.json with the generated schemas filled in.
func openAPIDocument() ([]byte, error) {
	var doc map[string]any
	in, err := os.ReadFile("openapi.in.json")
	if err == nil {
		err = json.Unmarshal(in, &doc)
	}
	if err != nil {
		return nil, fmt.Errorf("openapi.in.json: %w", err)
	}
	if doc["paths"], err = routePaths(doc["paths"].(map[string]any)); err != nil {
		return nil, err
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	names := map[reflect.Type]string{}
	for name, v := range generated {
		names[reflect.TypeOf(v)] = name
	}
	gen := openapi3gen.NewGenerator(
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.CreateTypeNameGenerator(func(t reflect.Type) string { return names[t] }),
		openapi3gen.SchemaCustomizer(func(_ string, t reflect.Type, tag reflect.StructTag, s *openapi3.Schema) error {
			// encoding/json leaves an empty pointer out rather than writing null
			s.Nullable = s.Nullable && !strings.Contains(tag.Get("json"), ",omitempty")
			if t.Kind() != reflect.Struct || t == reflect.TypeFor[time.Time]() {
				return nil
			}
			// closed, so that an answer with a field no type has fails the API tests
			s.AdditionalProperties = openapi3.AdditionalProperties{Has: new(bool)}
			for f := range t.Fields() {
				name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name != "-" && f.IsExported() && !slices.Contains(strings.Split(opts, ","), "omitempty") {
					s.Required = append(s.Required, cmp.Or(name, f.Name))
				}
			}
			return nil
		}))
	made := openapi3.Schemas{}
	for name, v := range generated {
		if _, err := gen.NewSchemaRefForValue(v, made); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	for name := range made {
		if _, ok := generated[name]; !ok {
			return nil, fmt.Errorf("a shared type reached from another has no schema name %q: add it to generated", name)
		}
	}
	for name := range generated {
		var s map[string]any
		b, err := json.Marshal(made[name].Value)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil {
			return nil, err
		}
		if err := merge(name, s, schemas[name]); err != nil {
			return nil, err
		}
		schemas[name] = s
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	err = enc.Encode(doc)
	return out.Bytes(), err
}

// merge adds what openapi.in.json says of a generated schema (hand, which may be nil) to
// s; it fails when hand speaks of a property the type does not have.
func merge(path string, s map[string]any, hand any) error {
	h, _ := hand.(map[string]any)
	for k, v := range h {
		if k != "properties" {
			s[k] = v
			continue
		}
		props, _ := s["properties"].(map[string]any)
		for p, pv := range v.(map[string]any) {
			sp, ok := props[p].(map[string]any)
			if !ok {
				return fmt.Errorf("openapi.in.json: %s.%s is not a field of its type", path, p)
			}
			for pk, pvv := range pv.(map[string]any) {
				sp[pk] = pvv
			}
		}
	}
	return nil
}

// pathParams describes the path parameters routes name; openapi.in.json says more where
// a route needs it (which message a message_id must be, say).
var pathParams = map[string]string{
	"task_id":       "A task id.",
	"session_id":    "A session id.",
	"message_id":    "A message id.",
	"account_id":    "An account id.",
	"token_id":      "A token id.",
	"link_id":       "A share link id.",
	"attachment_id": "An attachment id of that session.",
}

// routePaths is the paths of openapi.json: each route's operation as the route table gives
// it (summary, ending with the role it needs, path parameters, JSON body and answer, and the errors every route may
// answer), with hand, openapi.in.json's paths, applied over it as a JSON merge patch
// (RFC 7396: its values replace, its objects merge, its nulls remove). hand alone gives
// what is not a route of the table (/healthz, /ws).
func routePaths(hand map[string]any) (map[string]any, error) {
	paths := map[string]any{}
	for _, r := range routes {
		if r.path == "" {
			continue // a WebSocket action alone: /ws, in openapi.in.json
		}
		path := "/api/v1" + regexp.MustCompile(`:(\w+)`).ReplaceAllString(r.path, "{$1}")
		op := map[string]any{"summary": r.summary + " (role: " + r.role + ")", "responses": map[string]any{
			"401": errorAnswer("Missing or wrong token (servers started with --token)."),
			"429": mergePatch(errorAnswer("Too many wrong tokens from this address: wait `Retry-After` seconds."),
				map[string]any{"headers": map[string]any{"Retry-After": map[string]any{"schema": map[string]any{"type": "integer"}}}}),
			"500":                  errorAnswer("A store failure: `request failed`; details in the server log."),
			"507":                  errorAnswer("`insufficient_storage`: no room to store it. The server's disk or database is full, or its storage limit (`--max-storage`) is reached; it may succeed once room is made."),
			strconv.Itoa(r.status): jsonContent(r.out),
		}}
		var params []any
		for _, m := range regexp.MustCompile(`:(\w+)`).FindAllStringSubmatch(r.path, -1) {
			desc, ok := pathParams[m[1]]
			if !ok {
				return nil, fmt.Errorf("%s %s: path parameter %s has no description in pathParams", r.method, r.path, m[1])
			}
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}, "description": desc})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.in != "" {
			op["requestBody"] = mergePatch(jsonContent(r.in), map[string]any{"required": true})
		}
		ops, _ := paths[path].(map[string]any)
		if ops == nil {
			ops = map[string]any{}
			paths[path] = ops
		}
		ops[strings.ToLower(r.method)] = op
	}
	for path, ops := range hand {
		known, _ := paths[path].(map[string]any)
		for method := range ops.(map[string]any) {
			// A runner's connection is let in by its token, not by a role: no row has it.
			if _, ok := known[method]; strings.HasPrefix(path, "/api/v1/") && !ok && path != runner.ConnectPath {
				return nil, fmt.Errorf("openapi.in.json: %s %s is not in the route table", method, path)
			}
		}
	}
	return mergePatch(paths, hand).(map[string]any), nil
}

// errorAnswer is an answer of the Error schema.
func errorAnswer(description string) map[string]any {
	return mergePatch(jsonContent("Error"), map[string]any{"description": description}).(map[string]any)
}

// jsonContent is a body of the named schema; with no name, a body that says nothing yet.
func jsonContent(schema string) map[string]any {
	if schema == "" {
		return map[string]any{}
	}
	return map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/" + schema}}}}
}

// mergePatch applies patch to target as RFC 7396 says, changing target's objects in place.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// openapi.json is generated: a change to a shared type or to openapi.in.json without
// `go generate ./server/api` fails here.
func TestOpenAPIGenerated(t *testing.T) {
	doc, err := openAPIDocument()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("openapi.json", doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(doc, OpenAPI) && !*update {
		t.Errorf("openapi.json differs from what openapi.in.json and the shared types give: run go generate ./server/api")
	}
}
