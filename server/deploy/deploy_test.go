// Package deploy holds the runner's container image (Containerfile) and its Kubernetes
// manifests (kubernetes/). The tests parse them, and hold them to the code they deploy: the
// Go version of go.mod, the flags `conch runner` takes, and a token that only ever comes
// from a Secret.
package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"conch/server/servetest"
)

// runnerFlags are the flags `conch help runner` lists, from the built binary.
func runnerFlags(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(servetest.Bin(t), "help", "runner").Output()
	if err != nil {
		t.Fatalf("conch help runner: %v", err)
	}
	var flags []string
	for _, m := range regexp.MustCompile(`(?m)^\s+-{1,2}([a-z][a-z0-9-]*)`).FindAllSubmatch(out, -1) {
		flags = append(flags, string(m[1]))
	}
	if len(flags) == 0 {
		t.Fatalf("conch help runner lists no flags:\n%s", out)
	}
	return flags
}

// checkRunnerArgs fails unless args is a `conch runner` command line of flags the runner
// takes, and no token among them (`ps` shows arguments).
func checkRunnerArgs(t *testing.T, where string, args []string, flags []string) {
	t.Helper()
	if len(args) == 0 || args[0] != "runner" {
		t.Errorf("%s: the arguments %q do not start conch runner", where, args)
		return
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			continue // a flag's value
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !slices.Contains(flags, name) {
			t.Errorf("%s: conch runner has no flag %s (it has %v)", where, a, flags)
		}
		if strings.Contains(name, "token") && !strings.HasSuffix(name, "-file") {
			t.Errorf("%s: %s puts a token on the command line", where, a)
		}
	}
}

// documents parses every YAML document of the manifests.
func documents(t *testing.T) map[string]map[string]any {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in kubernetes/: %v", err)
	}
	docs := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			kind, _ := doc["kind"].(string)
			name, _ := dig(doc, "metadata", "name").(string)
			if doc["apiVersion"] == nil || kind == "" || name == "" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name: %v", f, doc)
			}
			docs[kind+"/"+name] = doc
		}
	}
	return docs
}

// dig follows keys through nested maps, and a number through a list.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, s := range l {
		str, _ := s.(string)
		out = append(out, str)
	}
	return out
}

// TestKubernetes: the runners' Deployment runs `conch runner` with flags it takes, its token
// from a Secret and nowhere else, with resource limits, as a user who is not root, and
// selects the pods it makes.
func TestKubernetes(t *testing.T) {
	flags := runnerFlags(t)
	docs := documents(t)
	d := docs["Deployment/conch-runner"]
	if d == nil {
		t.Fatalf("no Deployment conch-runner among %v", slices.Collect(maps.Keys(docs)))
	}
	if ns, _ := dig(d, "metadata", "namespace").(string); docs["Namespace/"+ns] == nil {
		t.Errorf("the Deployment's namespace %q is not made here", ns)
	}
	selector, _ := dig(d, "spec", "selector", "matchLabels").(map[string]any)
	labels, _ := dig(d, "spec", "template", "metadata", "labels").(map[string]any)
	if len(selector) == 0 {
		t.Error("the Deployment selects no pods")
	}
	for k, v := range selector {
		if labels[k] != v {
			t.Errorf("the pods' labels %v lack the selector's %s=%v", labels, k, v)
		}
	}
	pod := dig(d, "spec", "template", "spec")
	if dig(pod, "securityContext", "runAsNonRoot") != true {
		t.Error("the pod may run as root")
	}
	containers, _ := dig(pod, "containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("%d containers, want the runner alone", len(containers))
	}
	c := containers[0]
	checkRunnerArgs(t, "the Deployment", strs(dig(c, "args")), flags)
	token := false
	env, _ := dig(c, "env").([]any)
	for _, e := range env {
		name, _ := dig(e, "name").(string)
		if strings.Contains(name, "TOKEN") && dig(e, "value") != nil {
			t.Errorf("%s is written into the manifest; it must come from a Secret", name)
		}
		if name == "CONCH_RUNNER_TOKEN" && dig(e, "valueFrom", "secretKeyRef", "name") != nil {
			token = true
		}
	}
	if !token {
		t.Error("CONCH_RUNNER_TOKEN does not come from a Secret")
	}
	for _, r := range []string{"cpu", "memory"} {
		if dig(c, "resources", "limits", r) == nil || dig(c, "resources", "requests", r) == nil {
			t.Errorf("the runner has no %s request and limit", r)
		}
	}
	if dig(c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Error("the runner may gain privileges (allowPrivilegeEscalation)")
	}
	if !slices.Equal(strs(dig(c, "securityContext", "capabilities", "drop")), []string{"ALL"}) {
		t.Error("the runner keeps capabilities")
	}
}

// TestContainerfile: the image builds with go.mod's Go, runs as the manifests' user, and
// starts `conch runner` with flags it takes.
func TestContainerfile(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goVersion == nil {
		t.Fatal("go.mod names no Go version")
	}
	f, err := os.Open("Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var from, user []string
	var cmd []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "FROM":
			from = append(from, strings.Fields(rest)[0])
		case "USER":
			user = append(user, rest)
		case "CMD":
			if err := yaml.Unmarshal([]byte(rest), &cmd); err != nil { // JSON's form, which YAML reads
				t.Fatalf("CMD %s: %v", rest, err)
			}
		}
	}
	if len(from) == 0 || !strings.HasPrefix(from[0], "golang:"+string(goVersion[1])+"-") {
		t.Errorf("the build stage is %v, want golang:%s-… (go.mod's Go)", from, goVersion[1])
	}
	uid := dig(documents(t)["Deployment/conch-runner"], "spec", "template", "spec", "securityContext", "runAsUser")
	if len(user) == 0 || user[len(user)-1] != fmt.Sprint(uid) {
		t.Errorf("the image's user is %v, the pods run as %v", user, uid)
	}
	checkRunnerArgs(t, "the image's CMD", cmd, runnerFlags(t))
}
