package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"conch/shared"
)

// Permission policies of a profile: who answers the agent's permission requests. Ask (the
// person, in the UI or through the API) is the default for profiles from the agents file.
const (
	PermissionAsk   = "ask"
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
)

// ShellAgent is the name of the built-in agent.
const ShellAgent = shared.ShellAgent

// Profile is an agent Conch can start. An empty Command means the running binary
// (Config.Executable), which is how the built-in shell agent runs.
type Profile struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	// PassEnv names variables of the server's environment the agent gets too (an API
	// key), besides Env and the few every sandbox gets (baseEnv, HOME, TMPDIR): it gets
	// no other of the server's.
	PassEnv    []string `json:"pass_env,omitempty"`
	Permission string   `json:"permission,omitempty"`
	// NoReadTextFile leaves fs/read_text_file out of the capabilities Conch offers, so the
	// agent reads files itself (writes still come through Conch, which shows their diffs).
	// Gemini CLI 0.61.0 needs it to create a file: it reads the path first, and takes the
	// client's error object, not-found (-32002) included, for a failure of its own.
	NoReadTextFile bool `json:"no_read_text_file,omitempty"`
	// MCPServers are given to each session of the agent (session/new, load and resume).
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// AuthMethod is the id of one of the sign-in methods the agent lists in its initialize
	// answer, which Conch then asks for (ACP authenticate) before each session/new, load or
	// resume. Gemini CLI takes a new session on its GEMINI_API_KEY alone, but loads an
	// earlier one (after a restart) only once a method was chosen: "gemini-api-key".
	AuthMethod string `json:"auth_method,omitempty"`
	// Sandbox says what the agent may see besides its task's directories and the system,
	// and its network (sandbox.go).
	Sandbox SandboxConfig `json:"sandbox,omitzero"`
	// Labels are what a runner must have to take a session of the agent (`gpu`,
	// `os=linux`; shared.CheckLabels): with none, a session may run here too.
	Labels []string `json:"runner_labels,omitempty"`
}

// MCPServer is an MCP server an agent is told to use: one it starts (stdio: Command, Args,
// Env) or one it reaches (http or sse: URL, Headers). Every agent takes stdio; http and
// sse only go to an agent that says it can use them, and the session says which were left
// out.
type MCPServer struct {
	Name    string            `json:"name"`
	Type    string            `json:"type,omitempty"` // stdio (the default), http or sse
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// check is the rule for one server of a profile.
func (m *MCPServer) check() error {
	if m.Type == "" {
		m.Type = "stdio"
	}
	switch {
	case m.Name == "":
		return errors.New("an MCP server needs a name")
	case m.Type == "stdio" && (m.Command == "" || m.URL != "" || len(m.Headers) > 0):
		return fmt.Errorf("MCP server %q (stdio) needs a command, and has no url or headers", m.Name)
	case m.Type == "http" || m.Type == "sse":
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || m.Command != "" || len(m.Args) > 0 || len(m.Env) > 0 {
			return fmt.Errorf("MCP server %q (%s) needs an http or https url, and has no command, args or env", m.Name, m.Type)
		}
	case m.Type != "stdio":
		return fmt.Errorf("MCP server %q: type must be stdio, http or sse, not %q", m.Name, m.Type)
	}
	return nil
}

// mcpServers is what a session of p tells its agent, whose capabilities are caps, and the
// names of the servers the agent cannot use.
func (p Profile) mcpServers(caps sdk.McpCapabilities) (servers []sdk.McpServer, left []string) {
	servers = []sdk.McpServer{}
	for _, m := range p.MCPServers {
		switch {
		case m.Type == "stdio":
			servers = append(servers, sdk.McpServer{Stdio: &sdk.McpServerStdio{Name: m.Name, Command: m.Command,
				Args: append([]string{}, m.Args...), Env: envVariables(m.Env)}})
		case m.Type == "http" && caps.Http:
			servers = append(servers, sdk.McpServer{Http: &sdk.McpServerHttpInline{Type: "http", Name: m.Name, Url: m.URL, Headers: headers(m.Headers)}})
		case m.Type == "sse" && caps.Sse:
			servers = append(servers, sdk.McpServer{Sse: &sdk.McpServerSseInline{Type: "sse", Name: m.Name, Url: m.URL, Headers: headers(m.Headers)}})
		default:
			left = append(left, m.Name+" ("+m.Type+")")
		}
	}
	return servers, left
}

func envVariables(env map[string]string) []sdk.EnvVariable {
	out := []sdk.EnvVariable{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, sdk.EnvVariable{Name: k, Value: env[k]})
	}
	return out
}

func headers(h map[string]string) []sdk.HttpHeader {
	out := []sdk.HttpHeader{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		out = append(out, sdk.HttpHeader{Name: k, Value: h[k]})
	}
	return out
}

// BuiltinShell is the built-in shell agent: `conch agent shell`.
func BuiltinShell() Profile {
	return Profile{Name: ShellAgent, Description: "Runs each prompt as one shell command (sh -c) in the session's directory.",
		Args: []string{"agent", "shell"}, Permission: PermissionAllow}
}

// LoadProfiles reads the --agents file (a JSON array of profiles) and returns the
// built-in shell profile followed by the file's. An empty path means no file. A malformed
// file is an error that names the problem: unknown fields, a missing name or command, a
// duplicate name, an unknown permission.
func LoadProfiles(path string) ([]Profile, error) {
	profiles := []Profile{BuiltinShell()}
	if path == "" {
		return profiles, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	extra, err := parseProfiles(data)
	if err != nil {
		return nil, fmt.Errorf("agents file %s: %w", path, err)
	}
	return append(profiles, extra...), nil
}

func parseProfiles(data []byte) ([]Profile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var list []Profile
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("not a JSON array of profiles: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON array")
	}
	seen := map[string]bool{ShellAgent: true}
	for i, p := range list {
		switch {
		case p.Name == "":
			return nil, fmt.Errorf("profile %d: name is required", i)
		case seen[p.Name]:
			return nil, fmt.Errorf("profile %d: duplicate name %q", i, p.Name)
		case p.Command == "":
			return nil, fmt.Errorf("profile %q: command is required", p.Name)
		case p.Permission == "":
			list[i].Permission = PermissionAsk
		case p.Permission != PermissionAsk && p.Permission != PermissionAllow && p.Permission != PermissionDeny:
			return nil, fmt.Errorf("profile %q: permission must be %q, %q or %q, not %q", p.Name, PermissionAsk, PermissionAllow, PermissionDeny, p.Permission)
		}
		if err := list[i].Sandbox.check(); err != nil {
			return nil, fmt.Errorf("profile %q: %w", p.Name, err)
		}
		if err := shared.CheckLabels(p.Labels); err != nil {
			return nil, fmt.Errorf("profile %q: runner_labels: %w", p.Name, err)
		}
		for _, name := range p.PassEnv {
			if name == "" || strings.ContainsAny(name, "=\x00") || name == "CONCH_TOKEN" {
				return nil, fmt.Errorf("profile %q: pass_env: %q is not a variable it may have", p.Name, name)
			}
		}
		names := map[string]bool{}
		for j := range list[i].MCPServers {
			m := &list[i].MCPServers[j]
			if err := m.check(); err != nil {
				return nil, fmt.Errorf("profile %q: %w", p.Name, err)
			}
			if names[m.Name] {
				return nil, fmt.Errorf("profile %q: two MCP servers are named %q", p.Name, m.Name)
			}
			names[m.Name] = true
		}
		seen[p.Name] = true
	}
	return list, nil
}
