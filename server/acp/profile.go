package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Permission policies of a profile: who answers the agent's permission requests. Ask (the
// person, in the UI or through the API) is the default for profiles from the agents file.
const (
	PermissionAsk   = "ask"
	PermissionAllow = "allow"
	PermissionDeny  = "deny"
)

// ShellAgent is the name of the built-in agent.
const ShellAgent = "shell"

// Profile is an agent Conch can start. An empty Command means the running binary
// (Config.Executable), which is how the built-in shell agent runs.
type Profile struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Permission  string            `json:"permission,omitempty"`
	// NoReadTextFile leaves fs/read_text_file out of the capabilities Conch offers, so the
	// agent reads files itself (writes still come through Conch, which shows their diffs).
	// Gemini CLI 0.61.0 needs it to create a file: it reads the path first, and takes the
	// client's error object, not-found (-32002) included, for a failure of its own.
	NoReadTextFile bool `json:"no_read_text_file,omitempty"`
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
		seen[p.Name] = true
	}
	return list, nil
}
