package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

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
	"Account":                shared.Account{},
	"NewAccount":             shared.NewAccount{},
	"Invitation":             shared.Invitation{},
	"AccessToken":            shared.AccessToken{},
	"NewAccessToken":         shared.NewAccessToken{},
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
