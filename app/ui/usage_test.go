package ui

import (
	"testing"

	"github.com/maxence-charriere/go-app/v10/pkg/app"

	"conch/shared"
)

// The session bar's usage: a gauge of the context window (full at most, even when the
// agent reports more used than the window holds) and the cost; nothing without a report.
func TestUsageView(t *testing.T) {
	for _, tt := range []struct {
		name     string
		usage    *shared.Usage
		has, not []string
	}{
		{"none", nil, nil, []string{"usage", "meter"}},
		{"context and cost", &shared.Usage{ContextUsed: 52000, ContextSize: 200000, Cost: &shared.Cost{Amount: 0.254, Currency: "USD"}},
			[]string{`max="200000.0000"`, `value="52000.0000"`, `aria-label="Context window: 52k of 200k tokens"`, "26%", "0.25 USD"}, nil},
		{"over full", &shared.Usage{ContextUsed: 300, ContextSize: 200},
			[]string{`value="200.0000"`, "100%"}, []string{"cost"}},
		{"cost alone", &shared.Usage{Cost: &shared.Cost{Amount: 0.0012, Currency: "EUR"}},
			[]string{"0.0012 EUR"}, []string{"meter"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			html := ""
			if ui := usageView(&shared.Session{Usage: tt.usage}); ui != nil {
				html = compact(app.HTMLString(ui))
			}
			checkHTML(t, html, tt.has, tt.not)
		})
	}
	if got := costLabel([]shared.Cost{{Amount: 1.2, Currency: "EUR"}, {Amount: 3, Currency: "USD"}}); got != "1.20 EUR + 3.00 USD" {
		t.Errorf("costLabel: %q", got)
	}
	for n, want := range map[int64]string{950: "950", 52400: "52k", 1_250_000: "1.2M", 2_000_000: "2M"} {
		if got := tokensLabel(n); got != want {
			t.Errorf("tokensLabel(%d) = %q, want %q", n, got, want)
		}
	}
}
