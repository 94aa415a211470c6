package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"conch/server/hub"
	"conch/server/store"
	"conch/server/task"
	"conch/shared"
)

func TestShellOutputSnapshot(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.session(), e.session()
	done := e.shell(s1.ID, "make", shared.StatusCompleted, &shared.ShellOutput{Stdout: "héllo\n", Stderr: "warn\n", ExitCode: intp(2)})
	running := e.shell(s1.ID, "sleep 9", shared.StatusRunning, nil)
	text := e.text(s1.ID, "just words")
	base := "/api/v1/task-sessions/" + s1.ID + "/messages/"

	// A known non-zero exit makes the stored status failed whatever the agent said.
	got := e.expect(http.StatusOK, "GET", base+done.ID+"/shell-output", "", nil)
	want := fmt.Sprintf(`{"message_id":%q,"status":"failed","updated_at":%q,"output":{"stdout":"héllo\n","stderr":"warn\n","exit_code":2,"stdout_total_bytes":7,"stderr_total_bytes":5}}`,
		done.ID, done.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00"))
	if got != want {
		t.Errorf("populated snapshot\n got %s\nwant %s", got, want)
	}

	got = e.expect(http.StatusOK, "GET", base+running.ID+"/shell-output", "", nil)
	if !strings.HasSuffix(got, `"status":"running","updated_at":"`+running.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00")+`","output":{}}`) {
		t.Errorf("empty running snapshot: %s", got)
	}

	notFound := map[string]string{
		"missing":       base + "no-such-message/shell-output",
		"cross-session": "/api/v1/task-sessions/" + s2.ID + "/messages/" + done.ID + "/shell-output",
		"non-shell":     base + text.ID + "/shell-output",
		"no session":    "/api/v1/task-sessions/nope/messages/" + done.ID + "/shell-output",
	}
	for name, target := range notFound {
		if body := e.expect(http.StatusNotFound, "GET", target, "", nil); body != `{"error":"message not found","code":"not_found"}` {
			t.Errorf("%s: body %s", name, body)
		}
	}

	// One stream as a file to save, byte for byte; the same not-found answers.
	for stream, want := range map[string]string{"stdout": "héllo\n", "stderr": "warn\n"} {
		res, body := e.do("GET", base+done.ID+"/shell-output/raw?stream="+stream, "")
		if res.StatusCode != http.StatusOK || body != want || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
			res.Header.Get("Content-Disposition") != `attachment; filename="`+done.ID+"-"+stream+`.txt"` {
			t.Errorf("raw %s: %d %q %q %q", stream, res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"), body)
		}
	}
	if body := e.expect(http.StatusOK, "GET", base+running.ID+"/shell-output/raw?stream=stdout", "", nil); body != "" {
		t.Errorf("raw of a command without output: %q", body)
	}
	for name, target := range notFound {
		if body := e.expect(http.StatusNotFound, "GET", target+"/raw?stream=stdout", "", nil); body != `{"error":"message not found","code":"not_found"}` {
			t.Errorf("raw, %s: body %s", name, body)
		}
	}
	for _, q := range []string{"", "?stream=", "?stream=both", "?stream=STDOUT", "?stream=stdout%00"} {
		if body := e.expect(http.StatusBadRequest, "GET", base+done.ID+"/shell-output/raw"+q, "", nil); body != `{"error":"stream must be stdout or stderr","code":"invalid"}` {
			t.Errorf("raw%s: body %s", q, body)
		}
	}

	e.store.Close()
	if body := e.expect(http.StatusInternalServerError, "GET", base+done.ID+"/shell-output/raw?stream=stdout", "", nil); body != `{"error":"request failed","code":"internal"}` {
		t.Errorf("raw: store failure body %s", body)
	}
	if body := e.expect(http.StatusInternalServerError, "GET", base+done.ID+"/shell-output", "", nil); body != `{"error":"request failed","code":"internal"}` {
		t.Errorf("store failure body %s", body)
	}
	if !strings.Contains(e.logs.String(), "database is closed") {
		t.Errorf("store failure details not logged:\n%s", e.logs)
	}
}

func TestListMessagesRejectsBadQueries(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.session(), e.session()
	m1 := e.text(s1.ID, "one")
	other := e.text(s2.ID, "elsewhere")
	list := "/api/v1/task-sessions/" + s1.ID + "/messages"

	for query, want := range map[string]string{
		"limit=abc":                     "limit must be a positive integer",
		"limit=":                        "limit must be a positive integer",
		"limit=0":                       "limit must be a positive integer",
		"limit=-3":                      "limit must be a positive integer",
		"limit=1.5":                     "limit must be a positive integer",
		"sort=up":                       "sort must be asc or desc",
		"before=" + m1.ID + "&after=x":  "give before or after, not both",
		"before=" + other.ID:            "cursor is not a message of this session",
		"after=no-such-message&limit=2": "cursor is not a message of this session",
	} {
		var body shared.ErrorBody
		e.expect(http.StatusBadRequest, "GET", list+"?"+query, "", &body)
		if body.Error != want {
			t.Errorf("?%s: error %q, want %q", query, body.Error, want)
		}
	}
	if body := e.expect(http.StatusNotFound, "GET", "/api/v1/task-sessions/nope/messages", "", nil); body != `{"error":"session not found","code":"not_found"}` {
		t.Errorf("unknown session body %s", body)
	}
}

func TestListMessagesPagesAndCaps(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	ctx := context.Background()
	var ids []string
	for i := range shared.MaxPageLimit + 2 {
		m, _, _, err := e.store.AddUserMessage(ctx, s.ID, fmt.Sprint("m", i), "", "")
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	list := "/api/v1/task-sessions/" + s.ID + "/messages"
	var page shared.MessagePage

	e.expect(http.StatusOK, "GET", list+"?limit=100000", "", &page)
	if len(page.Messages) != shared.MaxPageLimit || !page.HasMore || page.Total != int64(len(ids)) || page.Cursor != ids[shared.MaxPageLimit-1] {
		t.Errorf("capped page: %d messages, has_more %v, total %d, cursor %s", len(page.Messages), page.HasMore, page.Total, page.Cursor)
	}
	e.expect(http.StatusOK, "GET", list, "", &page)
	if len(page.Messages) != shared.DefaultPageLimit || page.Messages[0].ID != ids[0] {
		t.Errorf("default page: %d messages starting %s", len(page.Messages), page.Messages[0].ID)
	}
	e.expect(http.StatusOK, "GET", list+"?sort=desc&limit=2&before="+ids[10], "", &page)
	if len(page.Messages) != 2 || page.Messages[0].ID != ids[9] || page.Messages[1].ID != ids[8] || !page.HasMore {
		t.Errorf("desc before page: %+v", page)
	}
	e.expect(http.StatusOK, "GET", list+"?after="+ids[len(ids)-3], "", &page)
	if len(page.Messages) != 2 || page.Messages[1].ID != ids[len(ids)-1] || page.HasMore {
		t.Errorf("last page after: %+v", page)
	}
}

// TestWireShapes pins the exact JSON of the list, task, session and error shapes.
func TestWireShapes(t *testing.T) {
	e := newEnv(t)
	var task shared.Task
	taskJSON := e.expect(http.StatusCreated, "POST", "/api/v1/tasks", `{"title":"Fix CI","description":"flaky test"}`, &task)
	ts := func(tm interface{ Format(string) string }) string {
		return tm.Format("2006-01-02T15:04:05.999999999Z07:00")
	}
	if want := fmt.Sprintf(`{"id":%q,"title":"Fix CI","description":"flaky test","created_at":%q,"updated_at":%q,"may_edit":true,"may_share":true}`,
		task.ID, ts(task.CreatedAt), ts(task.UpdatedAt)); taskJSON != want {
		t.Errorf("task\n got %s\nwant %s", taskJSON, want)
	}
	var sess shared.Session
	sessJSON := e.expect(http.StatusCreated, "POST", "/api/v1/tasks/"+task.ID+"/sessions", `{"agent":"shell","cwd":"/tmp"}`, &sess)
	if want := fmt.Sprintf(`{"id":%q,"task_id":%q,"agent":"shell","cwd":"/tmp","state":"ready","created_at":%q,"updated_at":%q}`,
		sess.ID, task.ID, ts(sess.CreatedAt), ts(sess.UpdatedAt)); sessJSON != want {
		t.Errorf("session\n got %s\nwant %s", sessJSON, want)
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+sess.ID, "", nil); got != sessJSON {
		t.Errorf("GET session %s, want %s", got, sessJSON)
	}

	user := e.expect(http.StatusAccepted, "POST", "/api/v1/task-sessions/"+sess.ID+"/messages", `{"content":"go test ./...","client_message_id":"c1"}`, nil)
	var um shared.Message
	if err := json.Unmarshal([]byte(user), &um); err != nil {
		t.Fatal(err)
	}
	sh := e.shell(sess.ID, "go test ./...", shared.StatusCompleted, &shared.ShellOutput{Stdout: "ok\n", ExitCode: intp(0)})
	got := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+sess.ID+"/messages", "", nil)
	want := fmt.Sprintf(`{"messages":[`+
		`{"id":%q,"session_id":%q,"task_id":%q,"author_type":"user","type":"message","content":"go test ./...","metadata":{"client_message_id":"c1"},"created_at":%q,"updated_at":%q},`+
		`{"id":%q,"session_id":%q,"task_id":%q,"author_type":"agent","type":"tool_execute","content":"go test ./...",`+
		`"metadata":{"tool_call_id":"call-go test ./...","title":"go test ./...","status":"completed","kind":"execute",`+
		`"normalized":{"kind":"shell_exec","shell_exec":{"command":"go test ./...","work_dir":"/repo",`+
		`"output":{"has_output":true,"stdout_bytes":3,"stderr_bytes":0,"truncated":false,"exit_code":0,"stdout_total_bytes":3,"stderr_total_bytes":0}}}},"created_at":%q,"updated_at":%q}`+
		`],"total":2,"has_more":false,"cursor":%q}`,
		um.ID, sess.ID, task.ID, ts(um.CreatedAt), ts(um.UpdatedAt),
		sh.ID, sess.ID, task.ID, ts(sh.CreatedAt), ts(sh.UpdatedAt), sh.ID)
	if got != want {
		t.Errorf("list\n got %s\nwant %s", got, want)
	}

	var tasks struct{ Tasks []shared.Task }
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &tasks)
	if len(tasks.Tasks) != 1 || len(tasks.Tasks[0].Sessions) != 1 || tasks.Tasks[0].Sessions[0].ID != sess.ID {
		t.Errorf("task list %+v", tasks)
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/agents", "", nil); got != `{"agents":[{"name":"shell","description":"runs each prompt as a shell command"}]}` {
		t.Errorf("agents %s", got)
	}
	if got := e.expect(http.StatusOK, "GET", "/healthz", "", nil); got != `{"status":"ok"}` {
		t.Errorf("healthz %s", got)
	}
}

func TestEmptyListsAreArrays(t *testing.T) {
	e := newEnv(t)
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil); got != `{"tasks":[]}` {
		t.Errorf("tasks %s", got)
	}
	s := e.session()
	if got := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", nil); got != `{"messages":[],"total":0,"has_more":false,"cursor":""}` {
		t.Errorf("messages %s", got)
	}
}

func TestCreateAndGetErrors(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	for _, c := range []struct {
		method, target, body string
		status               int
		want                 string
	}{
		{"POST", "/api/v1/tasks/nope/sessions", `{"agent":"shell"}`, 404, `{"error":"task not found","code":"not_found"}`},
		{"POST", "/api/v1/tasks/" + s.TaskID + "/sessions", `{"agent":"gemini"}`, 400, `{"error":"unknown agent \"gemini\"","code":"invalid"}`},
		{"GET", "/api/v1/tasks/nope", "", 404, `{"error":"task not found","code":"not_found"}`},
		{"GET", "/api/v1/task-sessions/nope", "", 404, `{"error":"session not found","code":"not_found"}`},
		{"POST", "/api/v1/task-sessions/nope/messages", `{"content":"ls"}`, 404, `{"error":"session not found","code":"not_found"}`},
		{"POST", "/api/v1/task-sessions/nope/cancel", "", 404, `{"error":"session not found","code":"not_found"}`},
		{"GET", "/api/v1/no-such-route", "", 404, `{"error":"no such route","code":"not_found"}`},
		{"DELETE", "/api/v1/tasks", "", 404, `{"error":"no such route","code":"not_found"}`},
	} {
		if got := e.expect(c.status, c.method, c.target, c.body, nil); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.target, got, c.want)
		}
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+s.TaskID, "", nil); !strings.Contains(got, `"id":"`+s.TaskID+`"`) {
		t.Errorf("GET task %s", got)
	}
}

// TestCheckKeys: a key given twice in one object, or naming a field in another letter
// case, is refused, at any depth and in the types the API decodes.
func TestCheckKeys(t *testing.T) {
	var (
		newTask  = reflect.TypeFor[task.NewTask]()
		envelope = reflect.TypeFor[shared.Envelope]()
		free     = reflect.TypeFor[any]()
		list     = reflect.TypeOf(struct { // the WebSocket's message.list payload
			shared.ListRequest
			Limit json.RawMessage `json:"limit"`
		}{})
		nested = reflect.TypeOf(struct {
			Items []*struct {
				Name string `json:"name"`
			} `json:"items"`
			Env map[string]string `json:"env"`
		}{})
	)
	for _, c := range []struct {
		t          reflect.Type
		body, want string
	}{
		{newTask, `{"title":"a","description":"b"}`, ""},
		{newTask, `{"title":"a","title":"b"}`, `key "title" appears twice`},
		{newTask, `{"title":"a","Title":"b"}`, `unknown field "Title"; field names are case-sensitive: did you mean "title"?`},
		{newTask, `{"TITLE":"a"}`, `unknown field "TITLE"; field names are case-sensitive: did you mean "title"?`},
		{newTask, `{"title":"k","description":"title"}`, ""}, // a value is no key
		{envelope, `{"type":"request","action":"x","payload":{"content":"ls","content":"rm"}}`, `key "content" appears twice`},
		{envelope, `{"type":"request","action":"x","payload":{"Content":"ls","content":"rm"}}`, ""}, // the payload's own decoding checks it
		{envelope, `{"type":"request","Action":"x"}`, `unknown field "Action"; field names are case-sensitive: did you mean "action"?`},
		{list, `{"session_id":"s","limit":5,"sort":"asc"}`, ""},
		{list, `{"session_id":"s","Sort":"asc"}`, `unknown field "Sort"; field names are case-sensitive: did you mean "sort"?`},
		{list, `{"Session_ID":"s"}`, `unknown field "Session_ID"; field names are case-sensitive: did you mean "session_id"?`},
		{nested, `{"items":[{"name":"a"},{"name":"b"}],"env":{"A":"1","a":"2"}}`, ""}, // a map's keys are its own
		{nested, `{"items":[{"name":"a"},{"Name":"b"}]}`, `unknown field "Name"; field names are case-sensitive: did you mean "name"?`},
		{nested, `{"env":{"a":"1","a":"2"}}`, `key "a" appears twice`},
		{free, `[{"x":1},{"y":[1,{"x":2,"x":3}]}]`, `key "x" appears twice`},
		{free, `{"a":[{"k":1},{"k":2}],"b":{"a":1}}`, ""}, // the same key in different objects
		{free, `{"a":{},"b":[],"c":null,"a":true}`, `key "a" appears twice`},
	} {
		if err := checkKeys([]byte(c.body), c.t); shared.ErrorMessage(err) != c.want || err != nil && shared.ErrorCode(err) != shared.CodeInvalid {
			t.Errorf("%s into %v: %v, want %q", c.body, c.t, err, c.want)
		}
	}
}

// TestLongFieldsAreRefused: a description or a prompt over its stated limit is a 400
// naming the limit, and stores nothing.
func TestLongFieldsAreRefused(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	for target, body := range map[string]string{
		"/api/v1/tasks": `{"title":"t","description":"` + strings.Repeat("d", shared.MaxDescriptionBytes+1) + `"}`,
		"/api/v1/task-sessions/" + s.ID + "/messages": `{"content":"` + strings.Repeat("c", shared.MaxPromptBytes+1) + `"}`,
	} {
		var got shared.ErrorBody
		e.expect(http.StatusBadRequest, "POST", target, body, &got)
		if want := map[bool]string{true: "description is longer than 64 KiB", false: "content is longer than 256 KiB"}[target == "/api/v1/tasks"]; got.Error != want {
			t.Errorf("%s: %q, want %q", target, got.Error, want)
		}
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", nil); !strings.Contains(got, `"total":0`) {
		t.Errorf("a long prompt was stored: %.200s", got)
	}
	if prompts, _ := e.rt.recorded(); len(prompts) != 0 {
		t.Errorf("a long prompt reached the agent")
	}
}

// TestBadBodiesStoreNothing sends every kind of bad body to every body-taking route.
func TestBadBodiesStoreNothing(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.BodyLimit = 4096 })
	s := e.session()
	routes := map[string]string{
		"task":    "/api/v1/tasks",
		"session": "/api/v1/tasks/" + s.TaskID + "/sessions",
		"message": "/api/v1/task-sessions/" + s.ID + "/messages",
	}
	cases := []struct {
		name, route, body, want string
	}{
		{"empty", "task", "", "request body is empty"},
		{"malformed", "task", `{"title":`, "malformed JSON: unexpected end of body"},
		{"syntax", "task", `{"title" "x"}`, "malformed JSON at byte 10"},
		{"array", "task", `["x"]`, "request body must be a JSON object"},
		{"wrong type", "task", `{"title":7}`, `field "title" must be a string`},
		{"unknown field", "task", `{"title":"x","descripton":"typo"}`, `unknown field "descripton"`},
		{"two objects", "task", `{"title":"x"}{"title":"y"}`, "request body must hold exactly one JSON object"},
		{"no title", "task", `{"description":"d"}`, "title is required"},
		{"long title", "task", `{"title":"` + strings.Repeat("t", shared.MaxTitleBytes+1) + `"}`, "title is longer than 500 bytes"},
		{"duplicate key", "task", `{"title":"a","title":"b"}`, `key "title" appears twice`},
		{"duplicate content", "message", `{"content":"ls","content":"rm -rf /"}`, `key "content" appears twice`},
		{"title in two cases", "task", `{"title":"a","Title":"b"}`, `unknown field "Title"; field names are case-sensitive: did you mean "title"?`},
		{"content in another case", "message", `{"Content":"rm -rf /"}`, `unknown field "Content"; field names are case-sensitive: did you mean "content"?`},
		{"blank title", "task", `{"title":"  \n"}`, "title is required"},
		{"null", "task", `null`, "title is required"},
		{"invalid utf-8", "task", "{\"title\":\"a\xff\"}", "request body is not valid UTF-8"},
		{"no agent", "session", `{"cwd":"/tmp"}`, "agent is required"},
		{"cwd type", "session", `{"agent":"shell","cwd":["/"]}`, `field "cwd" must be a string`},
		{"no content", "message", `{"client_message_id":"c"}`, "content is required"},
		{"blank content", "message", `{"content":"\t "}`, "content is required"},
		{"content type", "message", `{"content":{"text":"ls"}}`, `field "content" must be a string`},
		{"invalid utf-8 content", "message", "{\"content\":\"ls \xc3\x28\"}", "request body is not valid UTF-8"},
		{"other session", "message", `{"content":"ls","session_id":"elsewhere"}`, "session_id does not match the path"},
	}
	for _, c := range cases {
		var body shared.ErrorBody
		e.expect(http.StatusBadRequest, "POST", routes[c.route], c.body, &body)
		if body.Error != c.want {
			t.Errorf("%s: error %q, want %q", c.name, body.Error, c.want)
		}
	}
	tasks, err := e.store.ListTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || len(tasks[0].Sessions) != 1 {
		t.Errorf("bad bodies stored something: %d tasks, %d sessions", len(tasks), len(tasks[0].Sessions))
	}
	if got := e.expect(http.StatusOK, "GET", routes["message"], "", nil); !strings.Contains(got, `"total":0`) {
		t.Errorf("bad bodies stored messages: %s", got)
	}
	if prompts, _ := e.rt.recorded(); len(prompts) != 0 {
		t.Errorf("bad bodies prompted the agent: %q", prompts)
	}
}

func TestAddMessagePublishesThenPromptsOnce(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	sub := e.hub.Connect(hub.Who{})
	defer sub.Close()
	sub.Subscribe(s.ID)
	target := "/api/v1/task-sessions/" + s.ID + "/messages"

	var first, again, plain shared.Message
	e.expect(http.StatusAccepted, "POST", target, `{"content":"ls -la","client_message_id":"c-1"}`, &first)
	e.expect(http.StatusAccepted, "POST", target, `{"content":"ls -la","client_message_id":"c-1"}`, &again)
	e.expect(http.StatusAccepted, "POST", target, `{"content":"pwd","session_id":"`+s.ID+`"}`, &plain)
	if first.ID == "" || again.ID != first.ID || plain.ID == first.ID {
		t.Errorf("ids: first %s, repeat %s, plain %s", first.ID, again.ID, plain.ID)
	}
	if first.AuthorType != shared.AuthorUser || first.Content != "ls -la" || first.Metadata == nil || first.Metadata.ClientMessageID != "c-1" {
		t.Errorf("stored message %+v", first)
	}
	prompts, _ := e.rt.recorded()
	if want := []string{s.ID + ": ls -la", s.ID + ": pwd"}; fmt.Sprint(prompts) != fmt.Sprint(want) {
		t.Errorf("prompts %q, want %q", prompts, want)
	}
	frames := sub.Take()
	if len(frames) != 2 {
		t.Fatalf("%d added events, want 2 (none for the repeat)", len(frames))
	}
	var env shared.Envelope
	if err := json.Unmarshal(frames[0], &env); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(first)
	if env.Action != shared.ActionMessageAdded || string(env.Payload) != string(want) {
		t.Errorf("event %s %s, want the message as answered %s", env.Action, env.Payload, want)
	}
}

func TestPromptToFinishedSessionConflicts(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	if _, err := e.store.SetSessionState(context.Background(), s.ID, shared.SessionFailed, "agent exited"); err != nil {
		t.Fatal(err)
	}
	var body shared.ErrorBody
	e.expect(http.StatusConflict, "POST", "/api/v1/task-sessions/"+s.ID+"/messages", `{"content":"ls"}`, &body)
	if !strings.Contains(body.Error, "session is failed") {
		t.Errorf("error %q", body.Error)
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", nil); !strings.Contains(got, `"total":0`) {
		t.Errorf("conflict stored a message: %s", got)
	}
	if prompts, _ := e.rt.recorded(); len(prompts) != 0 {
		t.Errorf("prompted: %q", prompts)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	var got shared.Session
	e.expect(http.StatusAccepted, "POST", "/api/v1/task-sessions/"+s.ID+"/cancel", "", &got)
	if got.ID != s.ID {
		t.Errorf("answered %+v", got)
	}
	if _, cancels := e.rt.recorded(); len(cancels) != 1 || cancels[0] != s.ID {
		t.Errorf("cancels %q", cancels)
	}
}

func TestHealthzReportsAStoreThatDoesNotAnswer(t *testing.T) {
	e := newEnv(t)
	e.store.Close()
	if got := e.expect(http.StatusServiceUnavailable, "GET", "/healthz", "", nil); got != `{"error":"store unavailable","status":"unavailable"}` {
		t.Errorf("healthz %s", got)
	}
}

// TestOversizedBodyIs400 runs on a real listener: fasthttp refuses the body before any
// handler, and Fiber's in-memory Test transport reports that as a transport error.
func TestOversizedBodyIs400(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.BodyLimit = 4096 })
	s := e.session()
	addr := e.listen()
	for _, target := range []string{"/api/v1/tasks", "/api/v1/task-sessions/" + s.ID + "/messages"} {
		body := `{"title":"` + strings.Repeat("x", 5000) + `","content":"y"}`
		resp, err := http.Post("http://"+addr+target, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || string(raw) != `{"error":"request body too large","code":"too_large"}` {
			t.Errorf("%s: %d %s", target, resp.StatusCode, raw)
		}
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", nil); strings.Count(got, `"title"`) != 1 {
		t.Errorf("oversized body stored a task: %s", got)
	}
	if got := e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID+"/messages", "", nil); !strings.Contains(got, `"total":0`) {
		t.Errorf("oversized body stored a message: %s", got)
	}
}

func TestPanicIsA500AndLogged(t *testing.T) {
	e := newEnv(t)
	e.rt.panics.Store(true)
	if got := e.expect(http.StatusInternalServerError, "GET", "/api/v1/agents", "", nil); got != `{"error":"request failed","code":"internal"}` {
		t.Errorf("body %s", got)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "runtime bug") || !strings.Contains(logs, "stack=") {
		t.Errorf("panic not logged with its stack:\n%s", logs)
	}
	e.rt.panics.Store(false)
	e.expect(http.StatusOK, "GET", "/api/v1/agents", "", nil)
}

// A script holding only a message id learns its session (and the summary, never a body)
// from GET /api/v1/messages/{id}; an unknown id is the snapshot's 404.
func TestGetMessageByID(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	m := e.shell(sess.ID, "make", shared.StatusCompleted, &shared.ShellOutput{Stdout: "secret body\n", ExitCode: intp(0)})
	var got shared.Message
	body := e.expect(http.StatusOK, "GET", "/api/v1/messages/"+m.ID, "", &got)
	if got.ID != m.ID || got.SessionID != sess.ID || shared.ShellOf(got) == nil || shared.ShellOf(got).Output.StdoutBytes != 12 {
		t.Errorf("message %s", body)
	}
	if strings.Contains(body, "secret body") {
		t.Errorf("the answer carries the output body: %s", body)
	}
	if body := e.expect(http.StatusNotFound, "GET", "/api/v1/messages/nope", "", nil); body != `{"error":"message not found","code":"not_found"}` {
		t.Errorf("unknown id: %s", body)
	}
}

// DELETE /api/v1/tasks/{id}: the task's agents are stopped, everything it holds goes, its
// sessions' subscribers are told, and nothing else changes.
func TestDeleteTask(t *testing.T) {
	e := newEnv(t)
	s1 := e.session()
	m := e.shell(s1.ID, "make", shared.StatusCompleted, &shared.ShellOutput{Stdout: "out"})
	s2 := e.session()
	kept := e.text(s2.ID, "kept")
	sub := e.hub.Connect(hub.Who{})
	defer sub.Close()
	sub.Subscribe(s1.ID)

	e.expect(http.StatusNoContent, "DELETE", "/api/v1/tasks/"+s1.TaskID, "", nil)
	e.rt.mu.Lock()
	stops := append([]string(nil), e.rt.stops...)
	e.rt.mu.Unlock()
	if len(stops) != 1 || stops[0] != s1.ID {
		t.Errorf("stopped %v, want the task's session %s", stops, s1.ID)
	}
	for _, target := range []string{"/api/v1/tasks/" + s1.TaskID, "/api/v1/task-sessions/" + s1.ID,
		"/api/v1/messages/" + m.ID, "/api/v1/task-sessions/" + s1.ID + "/messages/" + m.ID + "/shell-output"} {
		e.expect(http.StatusNotFound, "GET", target, "", nil)
	}
	frames := sub.Take()
	if len(frames) != 1 || !strings.Contains(string(frames[0]), `"action":"session.deleted"`) || !strings.Contains(string(frames[0]), s1.ID) {
		t.Errorf("the subscriber got %q, want one session.deleted", frames)
	}
	e.expect(http.StatusOK, "GET", "/api/v1/messages/"+kept.ID, "", nil)
	if body := e.expect(http.StatusNotFound, "DELETE", "/api/v1/tasks/"+s1.TaskID, "", nil); body != `{"error":"task not found","code":"not_found"}` {
		t.Errorf("deleting twice: %s", body)
	}
	// A browser page of another origin cannot delete.
	e.expect(http.StatusForbidden, "DELETE", "/api/v1/tasks/"+s2.TaskID, "", nil, "Origin", "https://evil.example")
	e.expect(http.StatusOK, "GET", "/api/v1/tasks/"+s2.TaskID, "", nil)
}

// POST .../resume and session.resume answer the session with its agent started again; a
// session whose agent cannot resume is a conflict that says why.
func TestResumeAgent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s, other, forgetful := e.session(), e.session(), e.session()
	for _, sess := range []shared.Session{s, other} {
		if _, err := e.store.SetAgentSession(ctx, sess.ID, "agent-"+sess.ID, store.ResumeBy); err != nil {
			t.Fatal(err)
		}
	}
	for _, sess := range []shared.Session{s, other, forgetful} {
		e.expect(http.StatusOK, "POST", "/api/v1/task-sessions/"+sess.ID+"/stop", "", nil)
	}
	var got shared.Session
	e.expect(http.StatusOK, "POST", "/api/v1/task-sessions/"+s.ID+"/resume", "", &got)
	if got.ID != s.ID || got.Stopped || got.State != shared.SessionReady {
		t.Errorf("answered %+v", got)
	}
	if body := e.expect(http.StatusConflict, "POST", "/api/v1/task-sessions/"+forgetful.ID+"/resume", "", nil); !strings.Contains(body, "cannot resume") {
		t.Errorf("a resume of an agent that cannot: %s", body)
	}
	e.expect(http.StatusNotFound, "POST", "/api/v1/task-sessions/nope/resume", "", nil)

	w := mustDial(t, e.listen())
	env := w.request(shared.ActionResume, shared.SessionRef{SessionID: other.ID})
	if env.Type != shared.EnvelopeResponse || env.Decode(&got) != nil || got.ID != other.ID || got.Stopped {
		t.Errorf("session.resume answered %+v", env)
	}
	if p := errorOf(t, w.request(shared.ActionResume, shared.SessionRef{SessionID: forgetful.ID})); p.Code != shared.CodeConflict {
		t.Errorf("session.resume of an agent that cannot: %+v", p)
	}
}

// A draining server answers a prompt 503 draining with Retry-After, before storing it,
// and /healthz says it drains.
func TestDrainingRefusesPrompts(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	e.rt.mu.Lock()
	e.rt.draining = shared.Errorf(shared.CodeDraining, "this server is stopping")
	e.rt.mu.Unlock()
	resp, body := e.do("POST", "/api/v1/task-sessions/"+s.ID+"/messages", `{"content":"echo hi"}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" || body != `{"error":"this server is stopping","code":"draining"}` {
		t.Errorf("a prompt while draining: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if page, _ := e.store.ListMessages(context.Background(), shared.ListRequest{SessionID: s.ID}); len(page.Messages) != 0 || len(e.rt.prompts) != 0 {
		t.Errorf("the refused prompt was stored or queued: %+v %q", page.Messages, e.rt.prompts)
	}
	if body := e.expect(http.StatusServiceUnavailable, "GET", "/healthz", "", nil); !strings.Contains(body, `"status":"draining"`) {
		t.Errorf("/healthz while draining: %s", body)
	}
}

// POST .../stop and session.stop answer the session with its agent stopped; a session
// that ended is a conflict; a stopped session is told to its subscribers.
func TestStopAgent(t *testing.T) {
	e := newEnv(t)
	s, other, closed := e.session(), e.session(), e.session()
	if _, err := e.store.SetSessionState(context.Background(), closed.ID, shared.SessionClosed, ""); err != nil {
		t.Fatal(err)
	}
	w := mustDial(t, e.listen())
	w.request(shared.ActionSubscribe, shared.SessionRef{SessionID: s.ID})

	var got shared.Session
	e.expect(http.StatusOK, "POST", "/api/v1/task-sessions/"+s.ID+"/stop", "", &got)
	if got.ID != s.ID || !got.Stopped || got.State != shared.SessionReady {
		t.Errorf("answered %+v", got)
	}
	for {
		var sess shared.Session
		if env := w.next(); env.Action == shared.ActionSessionUpdated && env.Decode(&sess) == nil && sess.Stopped {
			break
		}
	}
	e.expect(http.StatusConflict, "POST", "/api/v1/task-sessions/"+closed.ID+"/stop", "", nil)
	e.expect(http.StatusNotFound, "POST", "/api/v1/task-sessions/nope/stop", "", nil)

	env := w.request(shared.ActionStop, shared.SessionRef{SessionID: other.ID})
	if env.Type != shared.EnvelopeResponse || env.Decode(&got) != nil || got.ID != other.ID || !got.Stopped {
		t.Errorf("session.stop answered %+v", env)
	}
	if p := errorOf(t, w.request(shared.ActionStop, shared.SessionRef{SessionID: closed.ID})); p.Code != shared.CodeConflict {
		t.Errorf("session.stop of a closed session: %+v", p)
	}
}

// GET /api/v1/usage sums the reported cost per day and per task; days it cannot read are
// a 400. The task list carries each task's total, its sessions no usage.
func TestUsageReport(t *testing.T) {
	e := newEnv(t)
	s := e.session()
	if _, err := e.store.SetSessionUsage(context.Background(), s.ID, shared.Usage{ContextUsed: 5, ContextSize: 10, Cost: &shared.Cost{Amount: 0.5, Currency: "EUR"}}); err != nil {
		t.Fatal(err)
	}
	today := s.CreatedAt.UTC().Format(time.DateOnly) // the store's clock, which steps by milliseconds
	body := e.expect(http.StatusOK, "GET", "/api/v1/usage?from="+today+"&to="+today, "", nil)
	if want := fmt.Sprintf(`{"from":%q,"to":%q,"days":[{"day":%q,"cost":[{"amount":0.5,"currency":"EUR"}]}],"tasks":[{"task_id":%q,"title":"task","cost":[{"amount":0.5,"currency":"EUR"}]}]}`,
		today, today, today, s.TaskID); body != want {
		t.Errorf("usage:\n%s\nwant\n%s", body, want)
	}
	e.expect(http.StatusBadRequest, "GET", "/api/v1/usage?from=tomorrow", "", nil)
	var tasks struct{ Tasks []shared.Task }
	e.expect(http.StatusOK, "GET", "/api/v1/tasks", "", &tasks)
	if len(tasks.Tasks) != 1 || !reflect.DeepEqual(tasks.Tasks[0].Cost, []shared.Cost{{Amount: 0.5, Currency: "EUR"}}) || tasks.Tasks[0].Sessions[0].Usage != nil {
		t.Errorf("the task list: %+v", tasks.Tasks)
	}
	var sess shared.Session
	if e.expect(http.StatusOK, "GET", "/api/v1/task-sessions/"+s.ID, "", &sess); sess.Usage == nil || sess.Usage.ContextUsed != 5 {
		t.Errorf("the session's usage: %+v", sess.Usage)
	}
}
