package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"conch/app/client"
	"conch/shared"
)

// attemptFlags are the flags of conch attempts.
type attemptFlags struct {
	prompt, agents, check *string
	maxCost               *float64
	keep                  *int
	mode                  *string
}

func newAttemptFlags(f *Flags) *attemptFlags {
	return &attemptFlags{
		prompt:  f.String("prompt", "", "start attempts: the prompt every agent gets"),
		agents:  f.String("agents", "", "start attempts: the agent profiles, comma-separated, 2 to 8 (they may repeat)"),
		check:   f.String("check", "", "start attempts: the command run in each attempt's worktree when its turn ends"),
		maxCost: f.Float64("max-cost", 0, "start attempts: what the task's attempts may cost together (0: no cap)"),
		keep:    f.Int("keep", 0, "keep attempt N: land it on the base and close the others"),
		mode:    f.String("mode", "merge", "with --keep: merge (a merge commit) or rebase"),
	}
}

// run starts attempts or keeps one when asked, then prints the task's attempts.
func (a *attemptFlags) run(ctx context.Context, api *client.Client, taskID string, stdout io.Writer, asJSON *json.Encoder) error {
	var list shared.AttemptList
	var err error
	switch {
	case *a.prompt != "" && *a.keep != 0:
		return fmt.Errorf("attempts: --prompt starts attempts and --keep keeps one: not both at once")
	case *a.prompt != "":
		list, err = api.StartAttempts(ctx, taskID, shared.AttemptsRequest{Prompt: *a.prompt,
			Agents: strings.Split(*a.agents, ","), Check: *a.check, MaxCost: *a.maxCost})
	case *a.keep != 0:
		if list, err = api.Attempts(ctx, taskID); err != nil {
			return err
		}
		session := ""
		for _, t := range list.Attempts {
			if t.N == *a.keep {
				session = t.SessionID
			}
		}
		if session == "" {
			return fmt.Errorf("attempts: the task has no attempt %d", *a.keep)
		}
		list, err = api.KeepAttempt(ctx, taskID, session, *a.mode)
	default:
		list, err = api.Attempts(ctx, taskID)
	}
	if err != nil {
		return err
	}
	if asJSON != nil {
		for _, t := range list.Attempts {
			if err := asJSON.Encode(t); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "N\tAGENT\tSTATE\tCHECK\tFILES\t+/-\tCOMMANDS\tWALL\tSESSION")
	for _, t := range list.Attempts {
		state := string(t.State)
		if t.Outcome != "" {
			state = t.Outcome
		}
		check := "-"
		if t.CheckExit != nil {
			check = fmt.Sprintf("exit %d in %s", *t.CheckExit, time.Duration(t.CheckMillis)*time.Millisecond)
		} else if t.Check != "" {
			check = t.Check
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t+%d -%d\t%d (%d failed)\t%s\t%s\n", t.N, oneLine(t.Agent), state, check,
			t.Files, t.Added, t.Removed, t.Commands, t.Failed, time.Duration(t.WallMillis)*time.Millisecond, t.SessionID)
	}
	return w.Flush()
}
