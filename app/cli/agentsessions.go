package cli

import (
	"cmp"
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

// agentSessionFlags are the flags of conch agent-sessions.
type agentSessionFlags struct {
	agent, cwd, cursor, ids *string
}

func newAgentSessionFlags(f *Flags) *agentSessionFlags {
	return &agentSessionFlags{
		agent:  f.String("agent", "", "the agent profile whose sessions are listed (required)"),
		cwd:    f.String("cwd", "", "the directory on the server's host, for a task on no repository"),
		cursor: f.String("cursor", "", "the next page: the cursor the page before printed"),
		ids:    f.String("import", "", "import these of the agent's session ids, comma-separated, as sessions of the task"),
	}
}

// run lists one page of the agent's sessions in the task's directory, or imports some
// and prints the new sessions.
func (a *agentSessionFlags) run(ctx context.Context, api *client.Client, taskID string, stdout, stderr io.Writer, asJSON *json.Encoder) error {
	if *a.agent == "" {
		return fmt.Errorf("agent-sessions: --agent is required")
	}
	if *a.ids != "" {
		sessions, err := api.ImportAgentSessions(ctx, taskID, shared.ImportAgentSessions{Agent: *a.agent, Cwd: *a.cwd, SessionIDs: strings.Split(*a.ids, ",")})
		if err != nil {
			return err
		}
		for _, s := range sessions {
			if asJSON != nil {
				if err := asJSON.Encode(s); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(stdout, "%s imported: its first prompt resumes the conversation\n", s.ID)
		}
		return nil
	}
	page, err := api.AgentSessions(ctx, taskID, *a.agent, *a.cwd, *a.cursor)
	if err != nil {
		return err
	}
	if asJSON != nil {
		return asJSON.Encode(page)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tUPDATED\tSESSION\tTITLE")
	for _, s := range page.Sessions {
		updated := "-"
		if s.UpdatedAt != nil {
			updated = s.UpdatedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.ID, updated, cmp.Or(s.SessionID, "-"), oneLine(s.Title))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if page.Skipped > 0 {
		fmt.Fprintf(stderr, "%d entries the agent listed were left out: not acceptable\n", page.Skipped)
	}
	if page.NextCursor != "" {
		fmt.Fprintf(stderr, "more: --cursor %q\n", page.NextCursor)
	}
	return nil
}
