//go:build !js

package ui

import (
	"strings"
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"
	"golang.org/x/net/html"

	"conch/shared"
)

// The session bar's sandbox: nothing before the agent started with one; a warning when
// the server runs without; else one line of the directories and the network, the whole
// of it (and the private home) in its title, however long.
func TestSandboxView(t *testing.T) {
	long := make([]string, 12)
	for i := range long {
		long[i] = "/srv/conch/tasks/0123456789abcdef/a-rather-long-directory-name-" + strings.Repeat("x", i)
	}
	for _, tt := range []struct {
		name        string
		sandbox     *shared.Sandbox
		class, text string // "" class: nothing drawn
		title       []string
	}{
		{"nil", nil, "", "", nil},
		{"off", &shared.Sandbox{Off: true}, "attention", "Not sandboxed", []string{"--no-sandbox", "everything the server's user can"}},
		{"all", &shared.Sandbox{Dirs: []string{"/work/repo", "/data/extra"}, Home: "/var/lib/conch/home/s1", Network: shared.NetworkAll},
			"sandbox", "Sandboxed: /work/repo, /data/extra · network: all",
			[]string{"Sandboxed: /work/repo, /data/extra · network: all\nhome: /var/lib/conch/home/s1\n"}},
		{"none", &shared.Sandbox{Dirs: []string{"/work/repo"}, Network: shared.NetworkNone},
			"sandbox", "Sandboxed: /work/repo · network: none", []string{"network: none\nBesides"}},
		{"hosts", &shared.Sandbox{Dirs: []string{"/work/repo"}, Network: shared.NetworkHosts, Hosts: []string{"github.com", "proxy.golang.org"}},
			"sandbox", "Sandboxed: /work/repo · network: github.com, proxy.golang.org", nil},
		{"no host", &shared.Sandbox{Dirs: []string{"/work/repo"}, Network: shared.NetworkHosts},
			"sandbox", "Sandboxed: /work/repo · network: no host", nil},
		{"read-only", &shared.Sandbox{Dirs: []string{"/work/repo"}, Read: []string{"/opt/sdk", "/srv/cache"}, Network: shared.NetworkAll},
			"sandbox", "Sandboxed: /work/repo · read-only: /opt/sdk, /srv/cache · network: all", nil},
		{"long", &shared.Sandbox{Dirs: long, Home: "/home/" + strings.Repeat("h", 300), Network: shared.NetworkNone},
			"sandbox", "Sandboxed: " + strings.Join(long, ", ") + " · network: none",
			[]string{strings.Join(long, ", "), "home: /home/" + strings.Repeat("h", 300)}},
		{"marked", &shared.Sandbox{Dirs: []string{"/work/\u202egnp.exe"}, Home: "/h/\u200b", Network: shared.NetworkHosts, Hosts: []string{"evil\u202e.com"}},
			"sandbox", "Sandboxed: /work/⟨U+202E⟩gnp.exe · network: evil⟨U+202E⟩.com", []string{"home: /h/⟨U+200B⟩"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := shared.Session{Sandbox: tt.sandbox}.Visible() // as every session enters the page
			ui := sandboxView(&s)
			if tt.class == "" {
				if ui != nil {
					t.Fatalf("drawn: %s", app.HTMLString(ui))
				}
				return
			}
			if ui == nil {
				t.Fatal("nothing drawn")
			}
			doc, err := html.Parse(strings.NewReader(compact(app.HTMLString(ui))))
			if err != nil {
				t.Fatal(err)
			}
			els := find(doc, tt.class)
			if len(els) != 1 {
				t.Fatalf("%d elements of class %s", len(els), tt.class)
			}
			// The whole text is in the DOM, for a screen reader; CSS only hides its end.
			if got := strings.ReplaceAll(textOf(els[0]), "\u00a0", " "); got != tt.text {
				t.Errorf("text %q, want %q", got, tt.text)
			}
			title := attr(els[0], "title")
			if tt.class == "sandbox" && !strings.HasPrefix(title, tt.text+"\n") {
				t.Errorf("title %.200q does not start with the line", title)
			}
			for _, want := range tt.title {
				if !strings.Contains(title, want) {
					t.Errorf("title %.200q lacks %.200q", title, want)
				}
			}
			if h := tt.sandbox.Home; h != "" && strings.Contains(textOf(els[0]), shared.Visible(h)) {
				t.Error("the line shows the home")
			}
		})
	}
	if sandboxView(nil) != nil {
		t.Error("drawn without a session")
	}
}
