package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"conch/shared"
)

// benchAttempts is how many attempts the attempts step compares, each changing
// changedFiles files.
const benchAttempts = shared.MaxAttempts

// attemptsScript records, from the start of navigation, the first contentful paint and
// the frame after the compare table has all its rows (%[1]d), and counts the requests for
// a body (a diff, an output) the page makes.
const attemptsScript = `(() => {
	const t = window.__cmp = {fcp: 0, table: 0, bodies: 0};
	new PerformanceObserver((l) => {
		for (const e of l.getEntries()) if (e.name === "first-contentful-paint") t.fcp = e.startTime;
	}).observe({type: "paint", buffered: true});
	new PerformanceObserver((l) => {
		for (const e of l.getEntries()) if (/\/(changes|changes\/diff|shell-output)(\?|$)/.test(new URL(e.name).pathname + "?")) t.bodies++;
	}).observe({type: "resource", buffered: true});
	let seen = false;
	new MutationObserver(() => {
		if (!seen && document.querySelectorAll(".attempts tbody tr").length === %[1]d) {
			seen = true;
			requestAnimationFrame(() => { t.table = performance.now(); });
		}
	}).observe(document, {childList: true, subtree: true});
})();`

// attemptLoad is one load of the compare page, in ms from the start of navigation.
type attemptLoad struct {
	FCP    float64 `json:"fcp"`
	Table  float64 `json:"table"`
	Bodies float64 `json:"bodies"`
}

// attempts measures the compare page of benchAttempts attempts of the shell agent, each
// of which changed changedFiles files of a repository of twice as many: the list's answer
// (the first, which reads each attempt's change from its worktree and keeps its size, and
// the next) and the page's first paint and table.
func (b *bench) attempts(ctx context.Context) error {
	repo := filepath.Join(b.tmp, "attempts-repo")
	if err := makeRepo(ctx, repo); err != nil {
		return err
	}
	srv, err := startConch(ctx, b.conchBin, filepath.Join(b.tmp, "attempts.db"))
	if err != nil {
		return err
	}
	defer srv.stop()
	var task shared.Task
	if err := srv.post(ctx, "/api/v1/tasks", map[string]string{"title": "eight ways", "repo": repo}, &task, http.StatusCreated); err != nil {
		return err
	}
	agents := make([]string, benchAttempts)
	for i := range agents {
		agents[i] = shared.ShellAgent
	}
	// Each attempt adds a line to changedFiles files.
	prompt := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do f=$(printf 'pkg%%02d/file%%04d.txt' $((i %% 40)) $i); echo changed >> $f; i=$((i+1)); done`, changedFiles)
	req := shared.AttemptsRequest{Prompt: prompt, Agents: agents, Check: "true"}
	began := time.Now()
	if err := srv.post(ctx, "/api/v1/tasks/"+task.ID+"/attempts", req, new(shared.AttemptList), http.StatusCreated); err != nil {
		return err
	}
	path := "/api/v1/tasks/" + task.ID + "/attempts"
	var first, next, size dist
	for {
		t := time.Now()
		raw, err := srv.get(ctx, path)
		if err != nil {
			return err
		}
		var l shared.AttemptList
		if err := json.Unmarshal(raw, &l); err != nil {
			return err
		}
		done := len(l.Attempts) == benchAttempts
		for _, a := range l.Attempts {
			done = done && a.Check == shared.CheckPassed && a.State == shared.SessionReady
		}
		if done {
			first = append(first, float64(time.Since(t).Microseconds()))
			break
		}
		if time.Since(began) > 5*time.Minute {
			return fmt.Errorf("the attempts did not end within 5 minutes: %s", raw)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for range b.runs {
		t := time.Now()
		raw, err := srv.get(ctx, path)
		if err != nil {
			return err
		}
		next = append(next, float64(time.Since(t).Microseconds()))
		size = append(size, float64(len(raw)))
		if !strings.Contains(string(raw), fmt.Sprintf(`"files":%d`, changedFiles)) {
			return fmt.Errorf("the list does not count %d files: %.300s", changedFiles, raw)
		}
	}
	b.r.h(2, "Attempts compared")
	b.r.p("%d attempts of the shell agent on a repository of %d files, each of which added a line to %d of them in its "+
		"own worktree, then ran its check. The list's first answer after they ended reads each attempt's change from its "+
		"worktree with git and keeps its size; the next ones read the store only.", benchAttempts, 2*changedFiles, changedFiles)
	b.r.table([]string{"request", "time", "answer"}, [][]string{
		{"GET .../attempts, first after the turns", first.format(micros), ""},
		{"GET .../attempts, then", next.format(micros), size.format(bytesIEC)},
	})
	if !b.browser {
		b.r.p("The page: skipped (`-browser=false`).")
		return nil
	}
	var times [2][2]dist
	for run := range b.runs {
		loads, err := coldThenWarm(ctx, srv.URL+"/tasks/"+task.ID+"/attempts", filepath.Join(b.tmp, fmt.Sprintf("attempts-%d", run)), loadAttempts)
		if err != nil {
			return err
		}
		for i, l := range loads {
			if l.Bodies != 0 {
				return fmt.Errorf("the compare page fetched %.0f bodies unasked", l.Bodies)
			}
			times[i][0], times[i][1] = append(times[i][0], l.FCP), append(times[i][1], l.Table)
		}
	}
	b.r.p("Headless Chromium opens `/tasks/{id}/attempts`. *First paint* is the first contentful paint (the server's "+
		"page: its head and Loading attempts…); *table* is the frame after the table has its %d rows (app.wasm started, "+
		"the list fetched and drawn). No diff or output body is fetched. *Cold* is a fresh profile, *warm* the next visit "+
		"with app.wasm cached by the service worker; the median of %d profiles, and the spread.", benchAttempts, b.runs)
	b.r.table([]string{"visit", "first paint", "table"}, [][]string{
		{"cold", times[0][0].format(millis), times[0][1].format(millis)},
		{"warm", times[1][0].format(millis), times[1][1].format(millis)},
	})
	return nil
}

// loadAttempts opens the compare page in tab and waits for its table; after a cold load
// it also waits until the service worker has cached app.wasm.
func loadAttempts(tab context.Context, url string, cold bool) (attemptLoad, error) {
	ctx, cancel := context.WithTimeout(tab, 90*time.Second)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(attemptsScript, benchAttempts)})
			return err
		}),
		chromedp.Navigate(url),
	)
	if err != nil {
		return attemptLoad{}, err
	}
	l, err := chromedp.Run(ctx, chromedp.Poll[attemptLoad](`__cmp.fcp > 0 && __cmp.table > 0 && __cmp`,
		chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		return attemptLoad{}, fmt.Errorf("the table was not drawn: %w", err)
	}
	if cold {
		err = waitWorkerCached(ctx)
	}
	return l, err
}
