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

// runners is conch runners: the runners, or their tokens (list, make, revoke).
func runners(ctx context.Context, api *client.Client, f *Flags, rest []string, stdout, stderr io.Writer, asJSON *json.Encoder) error {
	verb := ""
	if len(rest) > 0 {
		verb = rest[0]
	}
	switch {
	case verb == "" && len(rest) == 0:
		list, err := api.Runners(ctx)
		if err != nil || asJSON != nil {
			return encodeAll(asJSON, list, err)
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tCONNECTED\tSESSIONS\tLABELS\tLAST SEEN")
		for _, r := range list {
			fmt.Fprintf(w, "%s\t%t\t%d/%d\t%s\t%s\n", r.Name, r.Connected, r.Sessions, r.Capacity, strings.Join(r.Labels, ","), r.LastSeen.Local().Format(time.DateTime))
		}
		return w.Flush()
	case verb == "tokens" && len(rest) == 1:
		tokens, err := api.RunnerTokens(ctx)
		if err != nil || asJSON != nil {
			return encodeAll(asJSON, tokens, err)
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tCREATED\tLAST USED")
		for _, t := range tokens {
			used := "-"
			if t.LastUsedAt != nil {
				used = t.LastUsedAt.Local().Format(time.DateTime)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, oneLine(t.Name), t.CreatedAt.Local().Format(time.DateTime), used)
		}
		return w.Flush()
	case verb == "token" && len(rest) == 2:
		t, err := api.CreateRunnerToken(ctx, rest[1])
		if err != nil || asJSON != nil {
			return encodeAll(asJSON, []shared.AccessToken{t}, err)
		}
		// The secret alone on stdout, for CONCH_RUNNER_TOKEN=$(conch runners token NAME).
		fmt.Fprintf(stderr, "runner token %s (%s), shown this once:\n", t.ID, t.Name)
		fmt.Fprintln(stdout, t.Token)
		return nil
	case verb == "revoke" && len(rest) == 2:
		return api.RevokeRunnerToken(ctx, rest[1])
	}
	return f.Fail("give no argument, tokens, token NAME or revoke TOKEN_ID")
}

// encodeAll writes each of list as a JSON line, or returns err.
func encodeAll[T any](asJSON *json.Encoder, list []T, err error) error {
	if err != nil {
		return err
	}
	for _, v := range list {
		if err := asJSON.Encode(v); err != nil {
			return err
		}
	}
	return nil
}
