// Package acptest is an ACP agent for tests: its turns are scripts chosen by the prompt's
// text, so a test plays a third-party agent (any update, permission request or stop
// reason it sends) in process through io.Pipe, or as a real process over stdio.
package acptest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Script is one turn: it runs when the prompt's text is its name. Returning StopWith
// ends the turn with that stop reason; any other error fails the turn; nil ends it with
// end_turn.
type Script func(ctx context.Context, a *Agent, sid sdk.SessionId) error

// StopWith, returned by a script, ends its turn with that stop reason instead of end_turn.
type StopWith sdk.StopReason

func (r StopWith) Error() string { return "stop: " + string(r) }

// Agent is the scripted agent; Conn is its side of the connection.
type Agent struct {
	Conn       *sdk.AgentSideConnection
	ready      chan struct{} // closed once Conn is set; the connection reads nothing before
	scripts    map[string]Script
	modeSwitch func(context.Context) error

	mu       sync.Mutex
	modes    *sdk.SessionModeState
	config   []sdk.SessionConfigOption
	models   *sdk.SessionModelState
	cfg      Config
	cwds     map[sdk.SessionId]string             // the directory of each session opened here
	signedIn bool                                 // authenticate was asked for
	blocks   map[sdk.SessionId][]sdk.ContentBlock // each session's last prompt
}

// Config is an agent: its scripts, and the session modes it offers (nil: none).
// ModeSwitch, when set, runs before each mode switch and refuses it with its error: a
// test plays an agent that answers late, or never (it waits for ctx).
//
// Resume and Load advertise session/resume and session/load. Such an agent remembers
// its sessions' prompts in a file of the session's directory (Memory), so another process
// of it can take a session up again: the Recall script answers with what it remembers.
// Load replays every remembered prompt as an agent message first. OnTakeUp, when set, is
// told of each resume or load (method and session id) before it is answered.
type Config struct {
	Scripts    map[string]Script
	Modes      *sdk.SessionModeState
	ModeSwitch func(ctx context.Context) error
	// ConfigOptions and Models are offered in every session/new, resume and load; a set
	// (session/set_config_option, session/set_model) changes them and is reported
	// (config_option_update). ConfigSwitch, when set, runs before each set as ModeSwitch
	// does before a mode switch.
	ConfigOptions []sdk.SessionConfigOption
	Models        *sdk.SessionModelState
	ConfigSwitch  func(ctx context.Context) error
	Resume        bool
	Load          bool
	// Fork advertises session/fork: a fork of a session remembers its prompts (Memory).
	Fork bool
	// LateReplay replays a loaded conversation after answering session/load, as Gemini
	// CLI does, instead of before as ACP says.
	LateReplay bool
	OnTakeUp   func(method string, sid sdk.SessionId)
	// List advertises session/list: the sessions remembered in the directory asked for
	// (Memory), in the order of their ids, ListPage a page (all when 0; the cursor is
	// the next one's index), each titled by its first prompt. Listed, when set, is the
	// answer instead (a hostile agent).
	List     bool
	ListPage int
	Listed   func(sdk.ListSessionsRequest) sdk.ListSessionsResponse
	// Close advertises session/close; OnClose, when set, is told of each and answers it
	// (one that waits for ctx plays an agent that never does).
	Close   bool
	OnClose func(ctx context.Context, sid sdk.SessionId) error
	// OnInitialize, when set, is given the client's initialize request.
	OnInitialize func(sdk.InitializeRequest)
	// MCP is the MCP transports the agent says it can use (stdio always); OnMCP, when
	// set, is given the MCP servers of each session/new, resume and load.
	MCP   sdk.McpCapabilities
	OnMCP func(method string, servers []sdk.McpServer)
	// Dirs advertises additionalDirectories; OnDirs, when set, is given the additional
	// directories of each session/new, resume and load.
	Dirs   bool
	OnDirs func(method string, dirs []string)
	// AuthMethods are the ids of the sign-in methods the agent lists; Authenticated, when
	// set, is told of each authenticate. An agent that lists methods opens no session
	// before one was asked for.
	AuthMethods   []string
	Authenticated func(methodID string)
	// SignIn, when set, is a sign-in the agent lists to run in a terminal (ACP terminal
	// authentication): the agent opens no session before the file SignedIn exists in the
	// session's directory, which a process that calls SignInHere there writes.
	SignIn *sdk.AuthMethodTerminalInline
	// Prompt is what the agent says it takes in a prompt besides text (images, embedded
	// resources). OnPrompt, when set, is given each prompt as received; the Received
	// script answers with what the last one carried.
	Prompt   sdk.PromptCapabilities
	OnPrompt func(sdk.PromptRequest)
}

// Memory is the file, in a session's directory, where an agent that can resume keeps
// what it remembers: a JSON object of each session id's prompts.
const Memory = ".acptest-memory.json"

// Recall is the prompt an agent that can resume answers with the prompts it remembers of
// the session, before this one: "I remember: a, b".
const Recall = "recall"

// Serve runs an agent of scripts, with no modes, over in/out until the client goes away
// or ctx ends.
func Serve(ctx context.Context, in io.Reader, out io.Writer, scripts map[string]Script) error {
	return Run(ctx, in, out, Config{Scripts: scripts})
}

// Run runs the agent cfg describes over in/out until the client goes away or ctx ends.
func Run(ctx context.Context, in io.Reader, out io.Writer, cfg Config) error {
	a := &Agent{scripts: cfg.Scripts, modes: cfg.Modes, modeSwitch: cfg.ModeSwitch, ready: make(chan struct{}), cfg: cfg,
		config: cfg.ConfigOptions, models: cfg.Models, cwds: map[sdk.SessionId]string{}, blocks: map[sdk.SessionId][]sdk.ContentBlock{}}
	// The SDK reads as soon as the connection is made, and its reader reads the logger
	// when the input ends: nothing is read before SetLogger has written it.
	a.Conn = sdk.NewAgentSideConnection(a, out, gated{in, a.ready})
	a.Conn.SetLogger(slog.New(slog.DiscardHandler))
	close(a.ready)
	select {
	case <-a.Conn.Done():
	case <-ctx.Done():
	}
	return nil
}

// gated reads from r once ready is closed.
type gated struct {
	r     io.Reader
	ready <-chan struct{}
}

func (g gated) Read(p []byte) (int, error) {
	<-g.ready
	return g.r.Read(p)
}

// Send sends one session/update. Handlers run only once Conn is set: the connection reads
// nothing before (gated).
func (a *Agent) Send(ctx context.Context, sid sdk.SessionId, u sdk.SessionUpdate) error {
	return a.Conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sid, Update: u})
}

// Prompt runs the script the prompt's text names.
func (a *Agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	if a.cfg.OnPrompt != nil {
		a.cfg.OnPrompt(p)
	}
	a.mu.Lock()
	a.blocks[p.SessionId] = p.Prompt
	a.mu.Unlock()
	name := ""
	if len(p.Prompt) > 0 && p.Prompt[0].Text != nil {
		name = p.Prompt[0].Text.Text
	}
	if a.cfg.Resume || a.cfg.Load {
		earlier, err := a.remember(p.SessionId, name)
		if err != nil {
			return sdk.PromptResponse{}, err
		}
		if name == Recall {
			text := "I remember: " + strings.Join(earlier, ", ")
			return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, a.Send(ctx, p.SessionId, sdk.UpdateAgentMessageText(text))
		}
	}
	script, ok := a.scripts[name]
	if !ok {
		return sdk.PromptResponse{}, fmt.Errorf("no script %q", name)
	}
	var stop StopWith
	switch err := script(ctx, a, p.SessionId); {
	case errors.As(err, &stop):
		return sdk.PromptResponse{StopReason: sdk.StopReason(stop)}, nil
	case err != nil:
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
}

func (a *Agent) Initialize(_ context.Context, req sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	if a.cfg.OnInitialize != nil {
		a.cfg.OnInitialize(req)
	}
	caps := sdk.AgentCapabilities{LoadSession: a.cfg.Load, McpCapabilities: a.cfg.MCP, PromptCapabilities: a.cfg.Prompt}
	if a.cfg.Resume {
		caps.SessionCapabilities.Resume = &sdk.SessionResumeCapabilities{}
	}
	if a.cfg.List {
		caps.SessionCapabilities.List = &sdk.SessionListCapabilities{}
	}
	if a.cfg.Close {
		caps.SessionCapabilities.Close = &sdk.SessionCloseCapabilities{}
	}
	if a.cfg.Fork {
		caps.SessionCapabilities.Fork = &sdk.SessionForkCapabilities{}
	}
	if a.cfg.Dirs {
		caps.SessionCapabilities.AdditionalDirectories = &sdk.SessionAdditionalDirectoriesCapabilities{}
	}
	methods := []sdk.AuthMethod{}
	for _, id := range a.cfg.AuthMethods {
		methods = append(methods, sdk.AuthMethod{Agent: &sdk.AuthMethodAgent{Id: id, Name: id}})
	}
	if a.cfg.SignIn != nil && req.ClientCapabilities.Auth.Terminal { // as ACP asks: only to a client that runs them
		methods = append(methods, sdk.AuthMethod{Terminal: a.cfg.SignIn})
	}
	return sdk.InitializeResponse{ProtocolVersion: sdk.ProtocolVersionNumber, AuthMethods: methods, AgentCapabilities: caps}, nil
}

func (a *Agent) Authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	if !slices.Contains(a.cfg.AuthMethods, p.MethodId) {
		return sdk.AuthenticateResponse{}, sdk.NewInvalidParams(map[string]any{"methodId": p.MethodId})
	}
	a.mu.Lock()
	a.signedIn = true
	a.mu.Unlock()
	if a.cfg.Authenticated != nil {
		a.cfg.Authenticated(p.MethodId)
	}
	return sdk.AuthenticateResponse{}, nil
}

// errAuthRequired is ACP's answer to a session request before authenticate.
var errAuthRequired = &sdk.RequestError{Code: -32000, Message: "Authentication required"}

// mayOpen answers errAuthRequired while the agent lists sign-in methods and none was asked
// for, or has a terminal sign-in and no SignedIn file is in cwd.
func (a *Agent) mayOpen(cwd string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.cfg.AuthMethods) > 0 && !a.signedIn {
		return errAuthRequired
	}
	if a.cfg.SignIn != nil {
		if _, err := os.Stat(filepath.Join(cwd, SignedIn)); err != nil {
			return errAuthRequired
		}
	}
	return nil
}

// SignedIn is the file, in a session's directory, that says a person signed in to an
// agent with a terminal sign-in (Config.SignIn).
const SignedIn = ".acptest-signed-in"

// SignInHere is the terminal sign-in of Config.SignIn, run in the session's directory.
func SignInHere() error {
	return os.WriteFile(SignedIn, []byte("yes\n"), 0o600)
}

// opened tells the test's hooks what a session/new, resume or load gave.
func (a *Agent) opened(method string, servers []sdk.McpServer, dirs []string) {
	if a.cfg.OnMCP != nil {
		a.cfg.OnMCP(method, servers)
	}
	if a.cfg.OnDirs != nil {
		a.cfg.OnDirs(method, dirs)
	}
}

// NewSession opens a session; an agent that can resume gives each a new id.
func (a *Agent) NewSession(_ context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	a.opened(sdk.AgentMethodSessionNew, p.McpServers, p.AdditionalDirectories)
	if err := a.mayOpen(p.Cwd); err != nil {
		return sdk.NewSessionResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sid := sdk.SessionId("scripted")
	if a.cfg.Resume || a.cfg.Load {
		sid = sdk.SessionId(fmt.Sprintf("scripted-%d", time.Now().UnixNano()))
		a.cwds[sid] = p.Cwd
		if _, err := a.keep(sid); err != nil {
			return sdk.NewSessionResponse{}, err
		}
	}
	return sdk.NewSessionResponse{SessionId: sid, Modes: a.modes, ConfigOptions: a.config, Models: a.models}, nil
}

// Cancel needs nothing more: the SDK cancels the running Prompt's context.
func (a *Agent) Cancel(context.Context, sdk.CancelNotification) error { return nil }

// CloseSession answers as OnClose does, for an agent that offers it.
func (a *Agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	if !a.cfg.Close {
		return sdk.CloseSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionClose)
	}
	if a.cfg.OnClose != nil {
		return sdk.CloseSessionResponse{}, a.cfg.OnClose(ctx, p.SessionId)
	}
	return sdk.CloseSessionResponse{}, nil
}

// ListSessions lists the sessions remembered in the directory asked for (Config.List).
func (a *Agent) ListSessions(_ context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	if !a.cfg.List {
		return sdk.ListSessionsResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionList)
	}
	if a.cfg.Listed != nil {
		return a.cfg.Listed(p), nil
	}
	if p.Cwd == nil {
		return sdk.ListSessionsResponse{}, sdk.NewInvalidParams(map[string]any{"error": "cwd is required"})
	}
	mem, err := readMemory(*p.Cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	ids := slices.Sorted(maps.Keys(mem))
	from, _ := strconv.Atoi(deref(p.Cursor))
	to := len(ids)
	if a.cfg.ListPage > 0 {
		to = min(to, from+a.cfg.ListPage)
	}
	r := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, id := range ids[min(from, to):to] {
		info := sdk.SessionInfo{SessionId: id, Cwd: *p.Cwd}
		if len(mem[id]) > 0 {
			info.Title = &mem[id][0]
		}
		r.Sessions = append(r.Sessions, info)
	}
	if to < len(ids) {
		r.NextCursor = new(strconv.Itoa(to))
	}
	return r, nil
}

// ResumeSession takes up a session remembered in cwd, replaying nothing.
func (a *Agent) ResumeSession(_ context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	a.opened(sdk.AgentMethodSessionResume, p.McpServers, p.AdditionalDirectories)
	if err := a.mayOpen(p.Cwd); err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	if !a.cfg.Resume {
		return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionResume)
	}
	if _, err := a.takeUp(sdk.AgentMethodSessionResume, p.SessionId, p.Cwd); err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return sdk.ResumeSessionResponse{Modes: a.modes, ConfigOptions: a.config, Models: a.models}, nil
}

// LoadSession takes up a session remembered in cwd and replays its prompts as agent
// messages before it answers, as ACP asks.
func (a *Agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	a.opened(sdk.AgentMethodSessionLoad, p.McpServers, p.AdditionalDirectories)
	if err := a.mayOpen(p.Cwd); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	if !a.cfg.Load {
		return sdk.LoadSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionLoad)
	}
	earlier, err := a.takeUp(sdk.AgentMethodSessionLoad, p.SessionId, p.Cwd)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	replay := func(ctx context.Context) error {
		for _, e := range earlier {
			if err := a.Send(ctx, p.SessionId, sdk.UpdateAgentMessageText("replayed: "+e)); err != nil {
				return err
			}
		}
		return nil
	}
	if a.cfg.LateReplay {
		go func() { _ = replay(context.Background()) }() // an error: the client is gone
	} else if err := replay(ctx); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return sdk.LoadSessionResponse{Modes: a.modes, ConfigOptions: a.config, Models: a.models}, nil
}

// takeUp finds a session remembered in cwd and returns its prompts.
func (a *Agent) takeUp(method string, sid sdk.SessionId, cwd string) ([]string, error) {
	if a.cfg.OnTakeUp != nil {
		a.cfg.OnTakeUp(method, sid)
	}
	mem, err := readMemory(cwd)
	if err != nil {
		return nil, err
	}
	earlier, ok := mem[sid]
	if !ok {
		return nil, sdk.NewInvalidParams(map[string]any{"error": "unknown session " + string(sid)})
	}
	a.mu.Lock()
	a.cwds[sid] = cwd
	a.mu.Unlock()
	return earlier, nil
}

// UnstableForkSession forks a session remembered in cwd into a new one that remembers
// the same prompts.
func (a *Agent) UnstableForkSession(_ context.Context, p sdk.UnstableForkSessionRequest) (sdk.UnstableForkSessionResponse, error) {
	if !a.cfg.Fork {
		return sdk.UnstableForkSessionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionFork)
	}
	earlier, err := a.takeUp(sdk.AgentMethodSessionFork, p.SessionId, p.Cwd)
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sid := sdk.SessionId(fmt.Sprintf("scripted-%d", time.Now().UnixNano()))
	a.cwds[sid] = p.Cwd
	if _, err := a.keep(sid, earlier...); err != nil {
		return sdk.UnstableForkSessionResponse{}, err
	}
	return sdk.UnstableForkSessionResponse{SessionId: sid, Modes: a.modes}, nil
}

// remember adds a prompt to the session's memory and returns the ones before it.
func (a *Agent) remember(sid sdk.SessionId, prompt string) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.keep(sid, prompt)
}

// keep adds prompts to the session's memory file and returns the ones before; a.mu is held.
func (a *Agent) keep(sid sdk.SessionId, prompts ...string) ([]string, error) {
	cwd, ok := a.cwds[sid]
	if !ok {
		return nil, fmt.Errorf("unknown session %s", sid)
	}
	mem, err := readMemory(cwd)
	if err != nil {
		return nil, err
	}
	earlier := mem[sid]
	mem[sid] = append(append([]string{}, earlier...), prompts...)
	raw, err := json.Marshal(mem)
	if err != nil {
		return nil, err
	}
	return earlier, os.WriteFile(filepath.Join(cwd, Memory), raw, 0o644)
}

func readMemory(cwd string) (map[sdk.SessionId][]string, error) {
	mem := map[sdk.SessionId][]string{}
	raw, err := os.ReadFile(filepath.Join(cwd, Memory))
	if errors.Is(err, os.ErrNotExist) {
		return mem, nil
	}
	if err != nil {
		return nil, err
	}
	return mem, json.Unmarshal(raw, &mem)
}

// SetSessionConfigOption sets one of the options the agent offers, reports the change
// and answers with them all, as ACP asks.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	if err := a.configSwitch(ctx); err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sid, set := setConfig(a.config, p)
	if !set {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "no such option or value"})
	}
	update := sdk.SessionUpdate{ConfigOptionUpdate: &sdk.SessionConfigOptionUpdate{ConfigOptions: a.config}}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: a.config}, a.Send(ctx, sid, update)
}

// configSwitch runs the test's ConfigSwitch, if any.
func (a *Agent) configSwitch(ctx context.Context) error {
	if a.cfg.ConfigSwitch == nil {
		return nil
	}
	return a.cfg.ConfigSwitch(ctx)
}

// setConfig sets the option p names in opts, when it offers p's value.
func setConfig(opts []sdk.SessionConfigOption, p sdk.SetSessionConfigOptionRequest) (sdk.SessionId, bool) {
	for _, o := range opts {
		switch {
		case p.Boolean != nil && o.Boolean != nil && o.Boolean.Id == p.Boolean.ConfigId:
			o.Boolean.CurrentValue = p.Boolean.Value
			return p.Boolean.SessionId, true
		case p.ValueId != nil && o.Select != nil && o.Select.Id == p.ValueId.ConfigId && o.Select.Options.Ungrouped != nil:
			for _, v := range *o.Select.Options.Ungrouped {
				if v.Value == p.ValueId.Value {
					o.Select.CurrentValue = v.Value
					return p.ValueId.SessionId, true
				}
			}
		}
	}
	return "", false
}

// UnstableSetSessionModel switches to one of the models the agent lists.
func (a *Agent) UnstableSetSessionModel(ctx context.Context, p sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	if err := a.configSwitch(ctx); err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.models != nil {
		for _, m := range a.models.AvailableModels {
			if string(m.ModelId) == string(p.ModelId) {
				a.models.CurrentModelId = m.ModelId
				return sdk.UnstableSetSessionModelResponse{}, nil
			}
		}
	}
	return sdk.UnstableSetSessionModelResponse{}, sdk.NewInvalidParams(map[string]any{"error": "no model " + string(p.ModelId)})
}

// SetSessionMode switches to a mode the agent offers and reports the switch, as agents
// do when they change modes themselves.
func (a *Agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	if a.modeSwitch != nil {
		if err := a.modeSwitch(ctx); err != nil {
			return sdk.SetSessionModeResponse{}, err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.modes == nil {
		return sdk.SetSessionModeResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetMode)
	}
	for _, m := range a.modes.AvailableModes {
		if m.Id == p.ModeId {
			a.modes.CurrentModeId = p.ModeId
			return sdk.SetSessionModeResponse{}, a.Send(ctx, p.SessionId, sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: p.ModeId}})
		}
	}
	return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]any{"error": "no mode " + string(p.ModeId)})
}

var (
	_ sdk.Agent       = (*Agent)(nil)
	_ sdk.AgentLoader = (*Agent)(nil)
)

// Usage is a usage_update: used of size tokens in the context window and, with a
// currency, the session's cost so far.
func Usage(used, size int, amount float64, currency string) sdk.SessionUpdate {
	u := &sdk.SessionUsageUpdate{Used: used, Size: size}
	if currency != "" {
		u.Cost = &sdk.Cost{Amount: amount, Currency: currency}
	}
	return sdk.SessionUpdate{UsageUpdate: u}
}

// Elicit is a turn that asks the person req (elicitation/create) and ends with a message
// that tells what it got back: "got " and the client's answer as JSON. A refused question
// fails the turn with the client's error; a cancel of the turn ends it cancelled.
func Elicit(req sdk.UnstableCreateElicitationRequest) Script {
	return func(ctx context.Context, a *Agent, sid sdk.SessionId) error {
		resp, err := a.Conn.UnstableCreateElicitation(ctx, req)
		if err != nil && ctx.Err() != nil || resp.Cancel != nil {
			return StopWith(sdk.StopReasonCancelled)
		}
		if err != nil {
			return err
		}
		b, err := json.Marshal(resp)
		if err != nil {
			return err
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("got "+string(b)))
	}
}

// ElicitCompleted is Elicit of a URL question that the agent ends itself once ready
// returns nil (elicitation/complete), as an agent does when the person's step on its page
// is done; the turn then tells what the client answered.
func ElicitCompleted(req sdk.UnstableCreateElicitationRequest, ready func(context.Context) error) Script {
	return func(ctx context.Context, a *Agent, sid sdk.SessionId) error {
		go func() {
			if ready(ctx) == nil { // a failed send leaves the question waiting: the test says so
				_ = a.Conn.UnstableCompleteElicitation(ctx, sdk.UnstableCompleteElicitationNotification{ElicitationId: req.Url.ElicitationId})
			}
		}()
		return Elicit(req)(ctx, a, sid)
	}
}

// Complete is a turn that tells the client the URL question id is done
// (elicitation/complete) and then says "completed " and the id.
func Complete(id string) Script {
	return func(ctx context.Context, a *Agent, sid sdk.SessionId) error {
		if err := a.Conn.UnstableCompleteElicitation(ctx, sdk.UnstableCompleteElicitationNotification{ElicitationId: sdk.UnstableElicitationId(id)}); err != nil {
			return err
		}
		return a.Send(ctx, sid, sdk.UpdateAgentMessageText("completed "+id))
	}
}

// Form is a form question of message with the fields (JSON Schema properties) and the
// required field names.
func Form(message string, fields map[string]any, required ...string) sdk.UnstableCreateElicitationRequest {
	r := sdk.NewUnstableCreateElicitationRequestForm(sdk.UnstableElicitationSchema{Properties: fields, Required: required})
	r.Form.Message = message
	return r
}

// Received answers with a line for each block after the prompt's text: "text: its
// words", "image image/png 68 bytes", "text a.txt text/plain: first line", "blob x.bin
// application/octet-stream 3 bytes", or "link a.txt".
func Received(ctx context.Context, a *Agent, sid sdk.SessionId) error {
	a.mu.Lock()
	blocks := a.blocks[sid]
	a.mu.Unlock()
	if len(blocks) > 0 && blocks[0].Text != nil { // the prompt's text: "received"
		blocks = blocks[1:]
	}
	var lines []string
	for _, b := range blocks {
		lines = append(lines, describe(b))
	}
	return a.Send(ctx, sid, sdk.UpdateAgentMessageText("received: "+strings.Join(lines, "; ")))
}

func describe(b sdk.ContentBlock) string {
	switch {
	case b.Text != nil: // its words on one line, the first 400 bytes
		text := strings.Join(strings.Fields(b.Text.Text), " ")
		return "text: " + text[:min(len(text), 400)]
	case b.Image != nil:
		data, err := base64.StdEncoding.DecodeString(b.Image.Data)
		if err != nil {
			return "image that is not base64"
		}
		return fmt.Sprintf("image %s %d bytes", b.Image.MimeType, len(data))
	case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
		r := b.Resource.Resource.TextResourceContents
		first, _, _ := strings.Cut(r.Text, "\n")
		return fmt.Sprintf("text %s %s: %s", path.Base(r.Uri), deref(r.MimeType), first)
	case b.Resource != nil && b.Resource.Resource.BlobResourceContents != nil:
		r := b.Resource.Resource.BlobResourceContents
		data, err := base64.StdEncoding.DecodeString(r.Blob)
		if err != nil {
			return "blob that is not base64"
		}
		return fmt.Sprintf("blob %s %s %d bytes", path.Base(r.Uri), deref(r.MimeType), len(data))
	case b.ResourceLink != nil:
		return "link " + b.ResourceLink.Name
	}
	return "other"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
