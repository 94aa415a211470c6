package acp

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"conch/server/acp/acptest"
	"conch/server/store"
	"conch/server/waittest"
	"conch/shared"
)

// form is the question of the tests: a required name of at most 10 characters, an age
// of 0 to 150, a colour of two and a yes/no.
var form = acptest.Form("Who are you?", map[string]any{
	"name":  map[string]any{"type": "string", "title": "Your name", "maxLength": 10},
	"age":   map[string]any{"type": "integer", "minimum": 0, "maximum": 150},
	"color": map[string]any{"type": "string", "oneOf": []any{map[string]any{"const": "red", "title": "Red"}, map[string]any{"const": "green", "title": "Green"}}},
	"ok":    map[string]any{"type": "boolean", "default": true},
}, "name")

// waitQuestion waits until a question of the session is published and returns it.
func waitQuestion(t *testing.T, env *testEnv, sessionID string) shared.Message {
	t.Helper()
	var q shared.Message
	waitFor(t, env.ev, "the question", func() bool {
		env.ev.mu.Lock()
		defer env.ev.mu.Unlock()
		for _, m := range env.ev.added {
			if m.SessionID == sessionID && m.Type == shared.TypeElicitation {
				q = m
				return true
			}
		}
		return false
	})
	return q
}

// answerQuestion is a person's answer as replica.Replica.AnswerElicitation makes it.
func (env *testEnv) answerQuestion(ctx context.Context, sessionID, messageID string, a shared.ElicitationAnswer) (shared.Message, error) {
	m, _, err := env.st.AnswerElicitation(ctx, sessionID, messageID, a)
	if err != nil {
		return m, err
	}
	env.ev.MessageUpdated(m)
	env.m.Answered(sessionID, messageID, m.Metadata.Elicitation.Answered())
	return m, nil
}

// needsAttention is whether the test's task needs attention.
func (env *testEnv) needsAttention(t *testing.T) bool {
	t.Helper()
	tasks, err := env.st.ListTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tasks[0].NeedsAttention
}

// lastText is the content of the session's last message once its turn ended.
func (env *testEnv) lastText(t *testing.T, sessionID string) string {
	t.Helper()
	env.waitIdle(t, sessionID)
	msgs := env.messages(t, sessionID)
	return msgs[len(msgs)-1].Content
}

// An `ask` profile offers elicitation; the agent's form question waits for the person as
// a pending message of its fields; answers its fields refuse change nothing; the answer
// that fits reaches the agent, with who gave it; a second answer is a conflict.
func TestElicitationForm(t *testing.T) {
	t.Parallel()
	var caps *sdk.ElicitationCapabilities
	env := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{"ask": acptest.Elicit(form)},
		OnInitialize: func(r sdk.InitializeRequest) { caps = r.ClientCapabilities.Elicitation }}), false, Profile{Name: "scripted", Permission: PermissionAsk})
	sess := env.start(t, "scripted")
	if caps == nil || caps.Form == nil || caps.Url == nil {
		t.Fatalf("elicitation capabilities %+v, want form and url", caps)
	}
	env.promptAsync(t, sess.ID, "ask")
	q := waitQuestion(t, env, sess.ID)
	e := q.Metadata.Elicitation
	if q.Content != "Who are you?" || q.Metadata.Status != shared.StatusPending || e == nil || e.Mode != shared.ElicitForm || len(e.Fields) != 4 {
		t.Fatalf("question %+v %+v", q, e)
	}
	name := e.Fields[2]
	if names := []string{e.Fields[0].Name, e.Fields[1].Name, e.Fields[2].Name, e.Fields[3].Name}; strings.Join(names, " ") != "age color name ok" ||
		name.Title != "Your name" || !name.Required || name.Max == nil || *name.Max != 10 || len(e.Fields[1].Options) != 2 || e.Fields[3].Default != true {
		t.Fatalf("fields %+v", e.Fields)
	}

	ctx := store.AnsweredBy(context.Background(), "ada")
	for _, tt := range []struct {
		a    shared.ElicitationAnswer
		want string
	}{
		{shared.ElicitationAnswer{Action: "maybe"}, "action must be accept, decline or cancel"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"age": 3.0}}, "Your name is required"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": 7.0}}, "Your name must be text"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Adalberta Lovelace"}}, "Your name must be at most 10 characters long"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "ada", "age": 2.5}}, "age must be a whole number"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "ada", "age": 151.0}}, "age must be at most 150"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "ada", "color": "blue"}}, "color must be one of its options"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "ada", "ok": "yes"}}, "ok must be true or false"},
		{shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "ada", "admin": true}}, `the question has no field "admin"`},
		{shared.ElicitationAnswer{Action: "decline", Content: map[string]any{"name": "ada"}}, "decline takes no content"},
	} {
		_, err := env.answerQuestion(ctx, sess.ID, q.ID, tt.a)
		if shared.ErrorCode(err) != shared.CodeInvalid || shared.ErrorMessage(err) != tt.want {
			t.Errorf("answer %+v: %v, want %q", tt.a, err, tt.want)
		}
	}
	if _, err := env.answerQuestion(ctx, sess.ID, "nope", shared.ElicitationAnswer{Action: "decline"}); shared.ErrorCode(err) != shared.CodeNotFound {
		t.Errorf("an answer to no question: %v", err)
	}

	m, err := env.answerQuestion(ctx, sess.ID, q.ID, shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "ada", "age": 36.0, "color": "green"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Metadata.Status != shared.StatusSelected || m.Metadata.AnsweredBy != "ada" || m.Metadata.Elicitation.Action != "accept" {
		t.Errorf("answered %+v %+v", m.Metadata, m.Metadata.Elicitation)
	}
	if got := env.lastText(t, sess.ID); got != `got {"action":"accept","content":{"age":36,"color":"green","name":"ada"}}` {
		t.Errorf("the agent got %s", got)
	}
	if _, err := env.answerQuestion(ctx, sess.ID, q.ID, shared.ElicitationAnswer{Action: "decline"}); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("second answer: %v", err)
	}
	assertEventsMatchStore(t, env, sess.ID)
}

// A multi-select (MCP's array of an enum, or of anyOf with titles) is a field of options
// to tick; answers out of its options or bounds change nothing, and the agent gets the
// ticked values as a JSON array.
func TestElicitationMultiSelect(t *testing.T) {
	t.Parallel()
	pick := acptest.Form("What should I check?", map[string]any{
		"checks": map[string]any{"type": "array", "title": "Checks", "minItems": 1, "maxItems": 2,
			"items": map[string]any{"type": "string", "enum": []any{"lint", "test", "race"}}, "default": []any{"test"}},
		"targets": map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{
			map[string]any{"const": "linux", "title": "Linux"}, map[string]any{"const": "js", "title": "The browser"}}}},
	}, "checks")
	env := newEnv(t, scripted(map[string]script{"ask": acptest.Elicit(pick)}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "ask")
	q := waitQuestion(t, env, sess.ID)
	e := q.Metadata.Elicitation
	if len(e.Fields) != 2 {
		t.Fatalf("fields %+v", e.Fields)
	}
	checks, targets := e.Fields[0], e.Fields[1]
	if checks.Type != shared.FieldArray || !checks.Required || len(checks.Options) != 3 || *checks.Min != 1 || *checks.Max != 2 ||
		targets.Type != shared.FieldArray || len(targets.Options) != 2 || targets.Options[1] != (shared.ElicitationOption{Value: "js", Title: "The browser"}) {
		t.Fatalf("fields %+v", e.Fields)
	}
	for _, tt := range []struct {
		content map[string]any
		want    string
	}{
		{map[string]any{"checks": []any{}}, "Checks is required"},
		{map[string]any{"checks": "lint"}, "Checks must be a list of its options"},
		{map[string]any{"checks": []any{"lint", "vet"}}, "Checks must be a list of its options"},
		{map[string]any{"checks": []any{"lint", "lint"}}, `Checks has "lint" twice`},
		{map[string]any{"checks": []any{"lint", "test", "race"}}, "Checks takes at most 2 of its options"},
		{map[string]any{"checks": []any{"lint"}, "targets": []any{"The browser"}}, "targets must be a list of its options"},
	} {
		_, err := env.answerQuestion(context.Background(), sess.ID, q.ID, shared.ElicitationAnswer{Action: "accept", Content: tt.content})
		if shared.ErrorCode(err) != shared.CodeInvalid || shared.ErrorMessage(err) != tt.want {
			t.Errorf("answer %v: %v, want %q", tt.content, err, tt.want)
		}
	}
	if _, err := env.answerQuestion(context.Background(), sess.ID, q.ID, shared.ElicitationAnswer{Action: "accept",
		Content: map[string]any{"checks": []any{"race", "lint"}, "targets": []any{"js"}}}); err != nil {
		t.Fatal(err)
	}
	if got := env.lastText(t, sess.ID); got != `got {"action":"accept","content":{"checks":["race","lint"],"targets":["js"]}}` {
		t.Errorf("the agent got %s", got)
	}
}

// A declined question is declined for the agent; a URL question takes accept alone.
func TestElicitationDeclineAndURL(t *testing.T) {
	t.Parallel()
	url := sdk.NewUnstableCreateElicitationRequestUrl("e-1", "https://example.test/login?x=1")
	url.Url.Message = "Sign in, please"
	env := newEnv(t, scripted(map[string]script{"ask": acptest.Elicit(form), "url": acptest.Elicit(url)}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted") // a profile without a policy asks
	env.promptAsync(t, sess.ID, "ask")
	q := waitQuestion(t, env, sess.ID)
	if _, err := env.answerQuestion(context.Background(), sess.ID, q.ID, shared.ElicitationAnswer{Action: "decline"}); err != nil {
		t.Fatal(err)
	}
	if got := env.lastText(t, sess.ID); got != `got {"action":"decline"}` {
		t.Errorf("the agent got %s", got)
	}

	env.ev.mu.Lock()
	env.ev.added = nil
	env.ev.mu.Unlock()
	env.promptAsync(t, sess.ID, "url")
	q = waitQuestion(t, env, sess.ID)
	if e := q.Metadata.Elicitation; q.Content != "Sign in, please" || e.Mode != shared.ElicitURL || e.URL != "https://example.test/login?x=1" {
		t.Fatalf("question %+v %+v", q, e)
	}
	if _, err := env.answerQuestion(context.Background(), sess.ID, q.ID, shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"x": "y"}}); shared.ErrorCode(err) != shared.CodeInvalid {
		t.Errorf("content for a url: %v", err)
	}
	if _, err := env.answerQuestion(context.Background(), sess.ID, q.ID, shared.ElicitationAnswer{Action: "accept"}); err != nil {
		t.Fatal(err)
	}
	if got := env.lastText(t, sess.ID); got != `got {"action":"accept"}` {
		t.Errorf("the agent got %s", got)
	}
}

// A hostile question is refused before anything of it is stored: the agent gets an error,
// the person a note of why, and the session goes on. A profile where no person answers
// does not offer elicitation, and refuses it.
func TestElicitationHostile(t *testing.T) {
	t.Parallel()
	field := func(extra map[string]any) map[string]any {
		f := map[string]any{"type": "string"}
		for k, v := range extra {
			f[k] = v
		}
		return f
	}
	many := map[string]any{}
	for i := range shared.MaxElicitationFields + 1 {
		many[strings.Repeat("f", i+1)] = field(nil)
	}
	wordy := map[string]any{}
	for i := range shared.MaxElicitationFields {
		wordy[strings.Repeat("f", i+1)] = field(map[string]any{"description": strings.Repeat("d", shared.MaxElicitationDesc)})
	}
	options := make([]any, shared.MaxElicitationOptions+1)
	for i := range options {
		options[i] = strings.Repeat("o", i+1)
	}
	list := func(items map[string]any, extra ...any) map[string]any {
		f := map[string]any{"type": "array", "items": items}
		for i := 0; i < len(extra); i += 2 {
			f[extra[i].(string)] = extra[i+1]
		}
		return f
	}
	url := func(u string) sdk.UnstableCreateElicitationRequest {
		return sdk.NewUnstableCreateElicitationRequestUrl("e", u)
	}
	cases := map[string]struct {
		req  sdk.UnstableCreateElicitationRequest
		want string
	}{
		"fields":      {acptest.Form("q", many), "a form has at most 16 fields, not 17"},
		"name":        {acptest.Form("q", map[string]any{strings.Repeat("n", 65): field(nil)}), "a field's name is longer than 64 bytes"},
		"title":       {acptest.Form("q", map[string]any{"a": field(map[string]any{"title": strings.Repeat("t", 201)})}), "field a's title is longer than 200 bytes"},
		"array":       {acptest.Form("q", map[string]any{"a": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}), "field a: a list takes its items from options (items enum or anyOf)"},
		"object":      {acptest.Form("q", map[string]any{"a": map[string]any{"type": "object"}}), `field a: type "object" is not one Conch shows (string, number, integer, boolean, array)`},
		"no-items":    {acptest.Form("q", map[string]any{"a": map[string]any{"type": "array", "enum": []any{"x"}}}), "field a: a list's items must be text options"},
		"num-items":   {acptest.Form("q", map[string]any{"a": list(map[string]any{"type": "number", "enum": []any{"x"}})}), "field a: a list's items must be text options"},
		"item-enum":   {acptest.Form("q", map[string]any{"a": list(map[string]any{"type": "string", "enum": []any{1, 2}})}), "field a is not a schema Conch reads"},
		"items":       {acptest.Form("q", map[string]any{"a": list(map[string]any{"type": "string", "enum": options})}), "field a has more than 32 options"},
		"any-twice":   {acptest.Form("q", map[string]any{"a": list(map[string]any{"anyOf": []any{map[string]any{"const": "x"}, map[string]any{"const": "x", "title": "X"}}})}), `field a has the option "x" twice`},
		"min-items":   {acptest.Form("q", map[string]any{"a": list(map[string]any{"enum": []any{"x"}}, "minItems", 2)}), "field a: no answer has at least 2 of its 1 options and at most its maxItems"},
		"list-deflt":  {acptest.Form("q", map[string]any{"a": list(map[string]any{"enum": []any{"x"}}, "default", []any{"y"})}), "field a: its default is not one of its values"},
		"enum":        {acptest.Form("q", map[string]any{"a": field(map[string]any{"enum": options})}), "field a has more than 32 options"},
		"required":    {acptest.Form("q", map[string]any{"a": field(nil)}, "b"), "the required field b is not in the form"},
		"default":     {acptest.Form("q", map[string]any{"a": field(map[string]any{"enum": []any{"x"}, "default": "y"})}), "field a: its default is not one of its values"},
		"message":     {acptest.Form(strings.Repeat("m", 2049), map[string]any{}), "message is longer than 2 KiB"},
		"total":       {acptest.Form("q", wordy), "the question is larger than 16 KiB"},
		"javascript":  {url("javascript:alert(1)"), "url must be an http or https address"},
		"url-bytes":   {url("https://x.test/" + strings.Repeat("a", 2048)), "url is longer than 2 KiB"},
		"nul-message": {acptest.Form("q\x00", map[string]any{}), "message contains a NUL character"},
	}
	scripts := map[string]script{}
	for name, c := range cases {
		scripts[name] = acptest.Elicit(c.req)
	}
	env := newEnv(t, scripted(scripts), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	for name, c := range cases {
		env.prompt(t, sess.ID, name)
		msgs := env.messages(t, sess.ID)
		var said bool
		for _, m := range msgs {
			if m.Type == shared.TypeElicitation {
				t.Fatalf("%s: a question was stored: %+v", name, m)
			}
			said = said || m.Content == "The agent asked a question Conch does not show: "+c.want+"."
		}
		if !said {
			t.Errorf("%s: no note %q, last %q", name, c.want, msgs[len(msgs)-1].Content)
		}
	}
	if got, err := env.st.GetSession(context.Background(), sess.ID); err != nil || got.State != shared.SessionReady {
		t.Errorf("session after the hostile questions: %+v %v", got, err)
	}

	var caps *sdk.ElicitationCapabilities
	allow := newEnv(t, scriptedAs(acptest.Config{Scripts: map[string]script{"ask": acptest.Elicit(form)},
		OnInitialize: func(r sdk.InitializeRequest) { caps = r.ClientCapabilities.Elicitation }}), false, Profile{Name: "scripted", Permission: PermissionAllow})
	sess = allow.start(t, "scripted")
	if caps != nil {
		t.Errorf("an allow profile offers elicitation: %+v", caps)
	}
	allow.prompt(t, sess.ID, "ask")
	for _, m := range allow.messages(t, sess.ID) {
		if m.Type == shared.TypeElicitation {
			t.Errorf("an allow profile stored a question: %+v", m)
		}
	}
}

// Two people answer at once: one answer wins, the other is a conflict, and the agent
// gets the winner's.
func TestElicitationOneAnswerWins(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(map[string]script{"ask": acptest.Elicit(form)}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "ask")
	q := waitQuestion(t, env, sess.ID)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"ada", "bob"} {
		wg.Go(func() {
			_, errs[i] = env.answerQuestion(store.AnsweredBy(context.Background(), name), sess.ID, q.ID,
				shared.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": name}})
		})
	}
	wg.Wait()
	won := 0
	for i := range errs {
		switch shared.ErrorCode(errs[i]) {
		case "":
			won = i
		case shared.CodeConflict:
		default:
			t.Fatalf("answer %d: %v", i, errs[i])
		}
	}
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Fatalf("answers %v, want one to win", errs)
	}
	winner := []string{"ada", "bob"}[won]
	if got := env.lastText(t, sess.ID); got != `got {"action":"accept","content":{"name":"`+winner+`"}}` {
		t.Errorf("the agent got %s, want %s's answer", got, winner)
	}
	for _, m := range env.messages(t, sess.ID) {
		if m.ID == q.ID && m.Metadata.AnsweredBy != winner {
			t.Errorf("answered by %q, want %q", m.Metadata.AnsweredBy, winner)
		}
	}
}

// Cancelling the turn withdraws a pending question: the agent gets cancel, the store
// says cancelled, the task no longer needs attention, and a late answer is a conflict.
func TestElicitationCancelWithdraws(t *testing.T) {
	t.Parallel()
	env := newEnv(t, scripted(map[string]script{"ask": acptest.Elicit(form)}), false, Profile{Name: "scripted"})
	sess := env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "ask")
	q := waitQuestion(t, env, sess.ID)
	attention := func() bool { return env.needsAttention(t) }
	if !attention() {
		t.Error("a pending question does not set needs_attention")
	}
	if err := env.m.Cancel(sess.ID); err != nil {
		t.Fatal(err)
	}
	env.waitIdle(t, sess.ID)
	msgs := env.messages(t, sess.ID)
	if last := msgs[len(msgs)-1]; last.Type != shared.TypeStatus || last.Metadata.StopReason != shared.StopCancelled {
		t.Errorf("last message %s %q", last.Type, last.Content)
	}
	for _, m := range msgs {
		if m.ID == q.ID && m.Metadata.Status != shared.StatusCancelled {
			t.Errorf("question after cancel: %s", m.Metadata.Status)
		}
	}
	if attention() {
		t.Error("a withdrawn question still sets needs_attention")
	}
	if _, err := env.answerQuestion(context.Background(), sess.ID, q.ID, shared.ElicitationAnswer{Action: "decline"}); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("answer after cancel: %v", err)
	}
}

// The agent ends its own URL question (elicitation/complete) once the person's step on
// its page is done: the question is stored completed, the agent's request is answered
// accept, the task no longer needs attention, and a person's late answer is a conflict.
// A completion of an id not waiting in the session (unknown, another session's, ended
// already) changes nothing, and a second pending question of the same id is refused.
func TestElicitationCompletedByTheAgent(t *testing.T) {
	t.Parallel()
	url := sdk.NewUnstableCreateElicitationRequestUrl("e-1", "https://example.test/login")
	url.Url.Message = "Sign in, please"
	done := make(chan struct{})
	second, stored := make(chan error, 1), make(chan struct{})
	ready := func(ctx context.Context) error {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	env := newEnv(t, scripted(map[string]script{
		"url": acptest.ElicitCompleted(url, ready),
		"twice": func(ctx context.Context, a *acptest.Agent, sid sdk.SessionId) error {
			go func() { // once the first is pending
				<-stored
				_, err := a.Conn.UnstableCreateElicitation(ctx, url)
				second <- err
			}()
			return acptest.ElicitCompleted(url, ready)(ctx, a, sid)
		},
		"e-1":  acptest.Complete("e-1"),
		"nope": acptest.Complete("nope"),
	}), false, Profile{Name: "scripted"})
	sess, other := env.start(t, "scripted"), env.start(t, "scripted")
	env.promptAsync(t, sess.ID, "url")
	q := waitQuestion(t, env, sess.ID)
	attention := func() bool { return env.needsAttention(t) }
	status := func() shared.ToolStatus {
		for _, m := range env.messages(t, sess.ID) {
			if m.ID == q.ID {
				return m.Metadata.Status
			}
		}
		t.Fatal("the question is gone")
		return ""
	}
	for _, id := range []string{"e-1", "nope"} { // another session's agent, or an id no one asked
		env.prompt(t, other.ID, id)
		if got := env.lastText(t, other.ID); got != "completed "+id {
			t.Fatalf("the other agent said %q", got)
		}
		if status() != shared.StatusPending || !attention() {
			t.Fatalf("a completion of %s from another session changed the question: %s", id, status())
		}
	}

	updated := len(env.ev.updated)
	close(done)
	if got := env.lastText(t, sess.ID); got != `got {"action":"accept"}` {
		t.Errorf("the agent got %s", got)
	}
	if got := status(); got != shared.StatusCompleted {
		t.Errorf("question after complete: %s", got)
	}
	env.ev.mu.Lock()
	published := env.ev.updated[updated:]
	env.ev.mu.Unlock()
	if len(published) != 1 || published[0].ID != q.ID || published[0].Metadata.Status != shared.StatusCompleted || published[0].Metadata.Elicitation.Action != "" {
		t.Errorf("published %+v, want the question completed", published)
	}
	if attention() {
		t.Error("a completed question still sets needs_attention")
	}
	if _, err := env.answerQuestion(context.Background(), sess.ID, q.ID, shared.ElicitationAnswer{Action: "accept"}); shared.ErrorCode(err) != shared.CodeConflict {
		t.Errorf("answer after complete: %v", err)
	}
	env.prompt(t, sess.ID, "e-1") // ended already
	if got := env.lastText(t, sess.ID); got != "completed e-1" || status() != shared.StatusCompleted {
		t.Errorf("a second completion: %q, question %s", got, status())
	}
	assertEventsMatchStore(t, env, sess.ID)

	done = make(chan struct{})
	env.ev.mu.Lock()
	env.ev.added = nil
	env.ev.mu.Unlock()
	env.promptAsync(t, sess.ID, "twice")
	waitQuestion(t, env, sess.ID)
	close(stored)
	select {
	case err := <-second:
		if err == nil || !strings.Contains(err.Error(), "a question with this elicitationId is pending") {
			t.Errorf("a second question of the same id: %v", err)
		}
	case <-time.After(waittest.Limit(t)):
		t.Fatal("the second question was never answered")
	}
	close(done)
	if got := env.lastText(t, sess.ID); got != `got {"action":"accept"}` {
		t.Errorf("the agent got %s", got)
	}
}
