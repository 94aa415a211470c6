package acp

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/waittest"
)

var updateTable = flag.Bool("update", false, "write docs/ACP.md's tables from what the real agents answer")

// realAgent is an ACP agent that runs offline once the Makefile has installed it into
// the git-ignored .cache (make acp-agents): its entry point, run by Node, and its
// arguments and environment.
type realAgent struct {
	target, path string
	args         []string
	env          map[string]string
}

var realAgents = []realAgent{
	{"gemini", ".cache/gemini/node_modules/@google/gemini-cli/bundle/gemini.js", []string{"--experimental-acp"},
		map[string]string{"GEMINI_API_KEY": "offline", "GEMINI_CLI_NO_RELAUNCH": "true"}},
	{"claude-acp", acptest.ClaudeAdapter, nil, nil},
	{"codex-acp", ".cache/codex-acp/node_modules/@zed-industries/codex-acp/bin/codex-acp.js", nil, nil},
}

// docs/ACP.md's tables lie between these lines.
const (
	tableStart = "<!-- The tables below are TestACPTable's (server/acp/table_test.go): go test ./server/acp -run TestACPTable -update -->\n"
	tableEnd   = "<!-- end of TestACPTable's tables -->\n"
)

// TestACPTable starts each agent that runs offline as a real process (Conch's shell agent,
// Gemini CLI, the Claude Code and Codex ACP adapters), sends it the initialize request a
// Conch session sends (recorded from one), and checks docs/ACP.md's tables against what
// they answered, for every method and capability of the SDK's ACP schema: -update writes
// them. An agent the Makefile installs and that is missing fails the test, saying which
// make target installs it.
func TestACPTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real agents, which make acp-agents installs (make test runs it)")
	}
	exe, node, _ := installed(t, realAgents[0])
	init := conchInitialize(t)
	answers := make([]map[string]any, 1+len(realAgents))
	names := make([]string, len(answers))
	var wg sync.WaitGroup
	for i := range answers {
		p, name := Profile{Name: "shell", Command: exe, Env: map[string]string{"CONCH_ACP_TEST_AGENT": "shell"}}, "Conch's shell agent"
		if i > 0 {
			a := realAgents[i-1]
			_, _, path := installed(t, a)
			p = Profile{Name: a.target, Command: node, Args: append([]string{path}, a.args...), Env: map[string]string{}}
			for k, v := range a.env {
				p.Env[k] = v
			}
		}
		p.Env["HOME"] = t.TempDir() // nothing of the machine's user: the agents start as on a new machine
		wg.Go(func() {
			answers[i] = initializeAgent(t, exe, p, init)
			names[i] = agentName(answers[i], name)
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	schema := readSchema(t)
	var req map[string]any
	raw, _ := json.Marshal(init)
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	got := tableStart + acpTables(t, schema, req, names, answers) + tableEnd

	doc := filepath.Join("..", "..", "docs", "ACP.md")
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	start, end := strings.Index(string(text), tableStart), strings.Index(string(text), tableEnd)
	if start < 0 || end < start {
		t.Fatalf("docs/ACP.md has no lines %q and %q around its tables", tableStart, tableEnd)
	}
	if old := string(text[start : end+len(tableEnd)]); old != got {
		if !*updateTable {
			t.Fatalf("docs/ACP.md's tables differ from what the agents answer: go test ./server/acp -run TestACPTable -update\n%s", got)
		}
		if err := os.WriteFile(doc, []byte(string(text[:start])+got+string(text[end+len(tableEnd):])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// installed is the test binary, Node, and a's entry point (absolute); it fails the test,
// naming the make target, when one is missing.
func installed(t *testing.T, a realAgent) (exe, node, path string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if node, err = exec.LookPath("node"); err != nil {
		t.Fatalf("the agents run on Node (Debian: nodejs): %v", err)
	}
	if path, err = filepath.Abs(filepath.Join("..", "..", a.path)); err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		t.Fatalf("no %s: run make %s (make acp-agents installs every agent server/acp's tests start): %v", a.path, a.target, err)
	}
	return exe, node, path
}

// conchInitialize is the initialize request a Conch session sends, as an agent receives it.
func conchInitialize(t *testing.T) sdk.InitializeRequest {
	t.Helper()
	var (
		mu  sync.Mutex
		got *sdk.InitializeRequest
	)
	env := newEnv(t, scriptedAs(acptest.Config{OnInitialize: func(r sdk.InitializeRequest) {
		mu.Lock()
		got = &r
		mu.Unlock()
	}}), false, Profile{Name: "scripted"})
	env.start(t, "scripted")
	mu.Lock()
	defer mu.Unlock()
	if got == nil {
		t.Fatal("no initialize request")
	}
	return *got
}

// initializeAgent starts p as Conch starts agents (ExecLauncher: its own process group
// and PID namespace, not sandboxed) in a directory of the test's, sends init and returns
// the answer as JSON.
func initializeAgent(t *testing.T, exe string, p Profile, init sdk.InitializeRequest) map[string]any {
	proc, err := ExecLauncher(exe)(p, t.TempDir(), unconfined(p))
	if err != nil {
		t.Errorf("start %s: %v", p.Name, err)
		return nil
	}
	defer func() {
		proc.Kill()
		<-proc.Exited
	}()
	conn, _ := connect(proc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Limit(t))
	defer cancel()
	r, err := conn.Initialize(ctx, init)
	if err != nil {
		t.Errorf("%s: initialize: %v (stderr: %s)", p.Name, err, proc.Stderr())
		return nil
	}
	var answer map[string]any
	raw, _ := json.Marshal(r)
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatal(err)
	}
	return answer
}

// agentName is the agent's column: its agentInfo's title and version, else fallback.
func agentName(answer map[string]any, fallback string) string {
	info, _ := answer["agentInfo"].(map[string]any)
	title, _ := info["title"].(string)
	version, _ := info["version"].(string)
	if title == "" || version == "" {
		return fallback
	}
	return title + " " + version
}

// acpSchema is what the tables list of the SDK's ACP schema.
type acpSchema struct {
	methods map[string][]string // "agent", "client", "protocol" → method names, sorted
	stable  map[string]bool     // the methods of the stable schema
	defs    map[string]map[string]any
	updates []string // the kinds of session/update
}

// readSchema reads the schema of the SDK in the module cache.
func readSchema(t *testing.T) acpSchema {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coder/acp-go-sdk").Output()
	if err != nil {
		t.Fatalf("find the ACP SDK: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "schema")
	read := func(name string, v any) {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = json.Unmarshal(raw, v)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var meta, stableMeta map[string]any
	read("meta.unstable.json", &meta)
	read("meta.json", &stableMeta)
	var doc struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	read("schema.unstable.json", &doc)
	s := acpSchema{methods: map[string][]string{}, stable: map[string]bool{}, defs: doc.Defs}
	for _, side := range []string{"agent", "client", "protocol"} {
		for _, m := range meta[side+"Methods"].(map[string]any) {
			s.methods[side] = append(s.methods[side], m.(string))
		}
		slices.Sort(s.methods[side])
		if ms, ok := stableMeta[side+"Methods"].(map[string]any); ok {
			for _, m := range ms {
				s.stable[m.(string)] = true
			}
		}
	}
	for _, u := range doc.Defs["SessionUpdate"]["oneOf"].([]any) {
		kind := u.(map[string]any)["properties"].(map[string]any)["sessionUpdate"].(map[string]any)["const"].(string)
		s.updates = append(s.updates, kind)
	}
	return s
}

// capability is one row of a capabilities table: its path in the object, and whether
// the schema says it is unstable.
type capability struct {
	path     string
	unstable bool
}

// capabilities walks the schema's def of capabilities: each property is a row, and one
// whose def has properties of its own (but _meta) is walked instead, but for nes (an
// editor's next edit suggestions: one row).
func (s acpSchema) capabilities(def, prefix string, unstable bool) []capability {
	var out []capability
	props, _ := s.defs[def]["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if name == "_meta" {
			continue
		}
		p := props[name].(map[string]any)
		desc, _ := p["description"].(string)
		un := unstable || strings.Contains(desc, "**UNSTABLE**")
		if ref := refOf(p); ref != "" && name != "nes" && len(mapOf(s.defs[ref]["properties"])) > 1 {
			out = append(out, s.capabilities(ref, prefix+name+".", un)...)
			continue
		}
		out = append(out, capability{prefix + name, un})
	}
	return out
}

// refOf is the def a property names, directly or in allOf/anyOf.
func refOf(p map[string]any) string {
	refs := []any{p}
	for _, k := range []string{"allOf", "anyOf"} {
		list, _ := p[k].([]any)
		refs = append(refs, list...)
	}
	for _, e := range refs {
		if r, ok := mapOf(e)["$ref"].(string); ok {
			return strings.TrimPrefix(r, "#/$defs/")
		}
	}
	return ""
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

// lookup is the value at a dotted path of an answer, nil when absent.
func lookup(v any, path string) any {
	for part := range strings.SplitSeq(path, ".") {
		v = mapOf(v)[part]
	}
	return v
}

// offers is a cell of an agent: what its answer says at path.
func offers(v any) string {
	switch v := v.(type) {
	case nil:
		return "no"
	case bool:
		if !v {
			return "no"
		}
		return "yes"
	case map[string]any:
		return "yes"
	case []any:
		if len(v) == 0 {
			return "no"
		}
		var ids []string
		for _, e := range v {
			id, _ := mapOf(e)["id"].(string)
			if kind, _ := mapOf(e)["type"].(string); kind != "" {
				id += " (" + kind + ")"
			}
			ids = append(ids, "`"+id+"`")
		}
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("`%v`", v)
}

// What an agent's initialize answer says of each agent method it may not offer: the path
// of its answer that offers it. The methods every agent answers are "required"; those
// whose offer comes with a session (its modes, options, models) are not measured here.
var (
	offeredBy = map[string]string{
		"authenticate": "authMethods", "logout": "agentCapabilities.auth.logout",
		"session/load": "agentCapabilities.loadSession", "session/list": "agentCapabilities.sessionCapabilities.list",
		"session/resume": "agentCapabilities.sessionCapabilities.resume", "session/close": "agentCapabilities.sessionCapabilities.close",
		"session/fork": "agentCapabilities.sessionCapabilities.fork", "mcp/message": "agentCapabilities.mcpCapabilities.acp",
		"nes/": "agentCapabilities.nes", "document/": "agentCapabilities.nes", "providers/": "agentCapabilities.providers",
	}
	requiredMethods = []string{"initialize", "session/new", "session/prompt", "session/cancel"}
	sessionOffers   = []string{"session/set_mode", "session/set_config_option", "session/set_model"}
)

// conchDoes says what Conch does with each method, update kind and capability of the
// schema: a new one in the SDK fails TestACPTable until it says.
var conchDoes = map[string]string{
	"initialize":                "sent first, with the client capabilities below",
	"authenticate":              "sent with the profile's `auth_method` before a session opens, and before a listing",
	"logout":                    "not sent",
	"session/new":               "sent for each session, with its profile's MCP servers and the task's other directories",
	"session/load":              "sent to take a stopped session up again when the agent offers no `session/resume`; the replay is not stored twice",
	"session/resume":            "sent to take a stopped session up again: after a stop, the idle rule, a crash, a restart, an import",
	"session/list":              "sent to list and import the agent's earlier sessions in a task's directory",
	"session/close":             "sent when a session ends for good (its task deleted, another attempt kept), for at most the request timeout",
	"session/fork":              "sent for Fork from here on an agent's reply; without it the new session starts with a summary to edit",
	"session/prompt":            "sent for each turn, with files as the agent's prompt capabilities allow",
	"session/cancel":            "sent when a person cancels, and at the end of a drain",
	"session/set_mode":          "sent when a person switches the mode",
	"session/set_config_option": "sent when a person sets an option",
	"session/set_model":         "sent when a person picks a model of an agent's model list",
	"mcp/message":               "not sent",
	"document/":                 "not sent: editor buffers, which Conch has none of",
	"nes/":                      "not sent: next edit suggestions are an editor's",
	"providers/":                "not sent: the profile configures the agent",

	"client:fs/read_text_file":          "answered inside the session's directory and the task's other directories",
	"client:fs/write_text_file":         "answered inside the session's directory and the task's other directories",
	"client:session/request_permission": "shown to people, or answered by the profile's permission policy",
	"client:session/update":             "taken: the kinds below",
	"client:terminal/":                  "answered: each command in the session's sandbox, its output stored and streamed",
	"client:elicitation/create":         "shown to people as a form or a link, answered by them",
	"client:elicitation/complete":       "ends a link question",
	"client:mcp/":                       "refused (method not found)",
	"client:$/cancel_request":           "taken by the SDK: it cancels the request's context",

	"user_message_chunk":        "dropped: Conch stores the prompts it sends (a load's replay is dropped whole)",
	"agent_message_chunk":       "stored as the agent's message",
	"agent_thought_chunk":       "stored as a thought",
	"tool_call":                 "stored as a tool call; `execute` as a command with its output",
	"tool_call_update":          "updates the tool call",
	"plan":                      "stored as the plan",
	"available_commands_update": "kept as the session's slash commands",
	"current_mode_update":       "kept as the session's mode",
	"config_option_update":      "kept as the session's options",
	"session_info_update":       "dropped",
	"usage_update":              "kept as the session's context use and cost",

	"agentCapabilities.auth.logout":                               "not used",
	"agentCapabilities.loadSession":                               "used when `session/resume` is not offered",
	"agentCapabilities.mcpCapabilities.acp":                       "not used",
	"agentCapabilities.mcpCapabilities.http":                      "the profile's HTTP MCP servers are passed; without it they are left out and the chat says so",
	"agentCapabilities.mcpCapabilities.sse":                       "the profile's SSE MCP servers are passed; without it they are left out and the chat says so",
	"agentCapabilities.nes":                                       "not used",
	"agentCapabilities.positionEncoding":                          "not used",
	"agentCapabilities.promptCapabilities.audio":                  "not used: Conch sends no audio",
	"agentCapabilities.promptCapabilities.embeddedContext":        "text and other files go as resources; without it they are refused at upload",
	"agentCapabilities.promptCapabilities.image":                  "images go as image blocks; without it they are refused at upload",
	"agentCapabilities.providers":                                 "not used",
	"agentCapabilities.sessionCapabilities.additionalDirectories": "the task's other directories are passed; without it the chat says they were not",
	"agentCapabilities.sessionCapabilities.close":                 "`session/close` is sent",
	"agentCapabilities.sessionCapabilities.fork":                  "Fork from here forks the agent's session (`session/fork`)",
	"agentCapabilities.sessionCapabilities.list":                  "earlier sessions can be imported",
	"agentCapabilities.sessionCapabilities.resume":                "`session/resume` is sent",

	"clientCapabilities.auth.terminal":         "offered: a terminal sign-in is shown in the chat, run in the session's terminal",
	"clientCapabilities.elicitation.form":      "offered unless the profile's permission policy answers alone (allow, deny)",
	"clientCapabilities.elicitation.url":       "offered unless the profile's permission policy answers alone (allow, deny)",
	"clientCapabilities.fs.readTextFile":       "offered, unless the profile says `no_read_text_file`",
	"clientCapabilities.fs.writeTextFile":      "offered",
	"clientCapabilities.nes":                   "not offered",
	"clientCapabilities.positionEncodings":     "not offered",
	"clientCapabilities.terminal":              "offered",
	"clientCapabilities._meta.terminal_output": "offered: an agent that runs commands itself reports their output (ACP-NOTES.md)",
}

// what is conchDoes of a name, or of its family ("client:terminal/" for client:terminal/kill).
func what(t *testing.T, name string) string {
	if s, ok := conchDoes[name]; ok {
		return s
	}
	if i := strings.Index(name, "/"); i > 0 {
		if s, ok := conchDoes[name[:i+1]]; ok {
			return s
		}
	}
	t.Errorf("conchDoes does not say what Conch does with %s", name)
	return "?"
}

// acpTables writes the tables: methods, session/update kinds, agent and client capabilities.
func acpTables(t *testing.T, s acpSchema, req map[string]any, names []string, answers []map[string]any) string {
	var b strings.Builder
	head := func(first string, cols ...string) {
		b.WriteString("| " + first + " | " + strings.Join(cols, " | ") + " |\n|" + strings.Repeat("---|", 1+len(cols)) + "\n")
	}
	row := func(cells ...string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	tag := func(name string, unstable bool) string {
		if unstable {
			return "`" + name + "` (unstable)"
		}
		return "`" + name + "`"
	}
	b.WriteString("\n### Methods the agent answers\n\n")
	head("method", append([]string{"Conch"}, names...)...)
	for _, m := range s.methods["agent"] {
		cells := []string{tag(m, !s.stable[m]), what(t, m)}
		for _, a := range answers {
			switch path := offeredBy[m]; {
			case slices.Contains(requiredMethods, m):
				cells = append(cells, "required")
			case slices.Contains(sessionOffers, m):
				cells = append(cells, "offered with a session")
			case path != "":
				cells = append(cells, offers(lookup(a, path)))
			default:
				prefix := m[:strings.Index(m, "/")+1]
				cells = append(cells, offers(lookup(a, offeredBy[prefix])))
			}
		}
		row(cells...)
	}
	b.WriteString("\n### Methods and notifications Conch answers\n\nThe agent sends them when it needs them; what Conch offers in `initialize` is below.\n\n")
	head("method", "Conch")
	for _, m := range slices.Concat(s.methods["client"], s.methods["protocol"]) {
		row(tag(m, !s.stable[m]), what(t, "client:"+m))
	}
	b.WriteString("\n### Kinds of `session/update`\n\n")
	head("kind", "Conch")
	for _, u := range s.updates {
		row("`"+u+"`", what(t, u))
	}
	b.WriteString("\n### Agent capabilities (`initialize`'s answer)\n\n")
	head("capability", append([]string{"Conch"}, names...)...)
	for _, c := range s.capabilities("AgentCapabilities", "", false) {
		cells := []string{tag(c.path, c.unstable), what(t, "agentCapabilities."+c.path)}
		for _, a := range answers {
			cells = append(cells, offers(lookup(a, "agentCapabilities."+c.path)))
		}
		row(cells...)
	}
	b.WriteString("\n### Client capabilities (what Conch's `initialize` offers)\n\n")
	head("capability", "Conch offers", "what for")
	for _, c := range append(s.capabilities("ClientCapabilities", "", false), capability{path: "_meta.terminal_output"}) {
		row(tag(c.path, c.unstable), offers(lookup(req["clientCapabilities"], c.path)), what(t, "clientCapabilities."+c.path))
	}
	return b.String()
}
