package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// step is one change of the schema, written for SQLite (dialect.ddl turns it into
// PostgreSQL's). A database's version is the number of steps it has had, kept in its
// schema_version row; starting applies the steps after it, each once, in order. A step
// is never edited after it has shipped: a change of the schema is a new step at the end.
type step struct {
	// table.column is a column the step adds: a database made before schema_version
	// has had the step when it has that column (detect). A step that moves data only
	// names none.
	table, column string
	stmts         []string
	// then, when set, runs after stmts in the same transaction (a move of data).
	then func(tx *gorm.DB, d *dialect) error
}

// steps is the schema's history. The statements of step 2 tolerate what they change
// already being there: databases made between the two changes it joins have half of it.
var steps = []step{
	{table: "tasks", column: "id", stmts: []string{
		`CREATE TABLE tasks (
			id TEXT PRIMARY KEY,
			title TEXT NOT NULL,
			description TEXT NOT NULL DEFAULT '',
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL)`,
		`CREATE INDEX idx_tasks_created ON tasks (created_at, id)`,
		`CREATE TABLE task_sessions (
			id TEXT PRIMARY KEY,
			task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
			agent TEXT NOT NULL,
			cwd TEXT NOT NULL,
			state TEXT NOT NULL,
			error TEXT NOT NULL DEFAULT '',
			message_count INTEGER NOT NULL DEFAULT 0,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL)`,
		`CREATE INDEX idx_sessions_task ON task_sessions (task_id, created_at)`,
		`CREATE TABLE messages (
			id TEXT PRIMARY KEY,
			session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
			task_id TEXT NOT NULL,
			author_type TEXT NOT NULL,
			type TEXT NOT NULL,
			content TEXT NOT NULL DEFAULT '',
			metadata TEXT,
			status TEXT NOT NULL DEFAULT '',
			client_message_id TEXT,
			created_at INTEGER NOT NULL,
			updated_at INTEGER NOT NULL)`,
		`CREATE INDEX idx_messages_session_order ON messages (session_id, created_at, id)`,
		`CREATE UNIQUE INDEX idx_messages_client_id ON messages (session_id, client_message_id)
			WHERE client_message_id IS NOT NULL`,
		`CREATE INDEX idx_messages_active ON messages (session_id, status) WHERE ` + unfinished,
		`CREATE TABLE shell_outputs (
			message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
			stdout TEXT NOT NULL DEFAULT '',
			stderr TEXT NOT NULL DEFAULT '',
			exit_code INTEGER,
			signal TEXT NOT NULL DEFAULT '',
			truncated INTEGER NOT NULL DEFAULT 0)`,
	}},
	// How a session's last turn ended. Recovery and cancellation look for tool calls that
	// are not finished: a partial index holds only those, led by status so that recovery
	// searches it rather than scanning.
	{table: "task_sessions", column: "last_stop_reason", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN last_stop_reason TEXT NOT NULL DEFAULT ''`,
		`DROP INDEX IF EXISTS idx_messages_active`,
		`CREATE INDEX IF NOT EXISTS idx_messages_unfinished ON messages (status, session_id) WHERE ` + unfinished,
		`CREATE INDEX IF NOT EXISTS idx_sessions_live ON task_sessions (state) WHERE ` + live,
	}},
	// The diffs and texts of tool calls that are not shell commands (toolcontent.go).
	{table: "tool_contents", column: "message_id", stmts: []string{
		`CREATE TABLE tool_contents (
			message_id TEXT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
			items TEXT NOT NULL,
			truncated BOOLEAN NOT NULL DEFAULT FALSE)`,
	}},
	{table: "task_sessions", column: "modes", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN modes TEXT NOT NULL DEFAULT ''`,    // JSON of shared.Modes
		`ALTER TABLE task_sessions ADD COLUMN commands TEXT NOT NULL DEFAULT ''`, // JSON of []shared.Command
	}},
	// Replicas and their leases, the replica running a session's agent, and the commands
	// addressed to them (replica.go, inbox.go).
	{table: "task_sessions", column: "owner", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN owner TEXT NOT NULL DEFAULT ''`,
		`CREATE TABLE replicas (
			id TEXT PRIMARY KEY,
			lease_until INTEGER NOT NULL)`,
		`CREATE TABLE inbox (
			id TEXT PRIMARY KEY,
			owner TEXT NOT NULL,
			sender TEXT NOT NULL,
			session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
			kind TEXT NOT NULL,
			message_id TEXT NOT NULL DEFAULT '',
			body TEXT NOT NULL DEFAULT '',
			created_at INTEGER NOT NULL)`,
		`CREATE INDEX idx_inbox_owner ON inbox (owner, created_at, id)`,
	}},
	// Output appended per stream (output.go) instead of whole bodies in shell_outputs.
	{table: "shell_output_chunks", column: "message_id", stmts: []string{
		`CREATE TABLE shell_output_chunks (
			message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
			stream INTEGER NOT NULL,
			start INTEGER NOT NULL,
			kept_from INTEGER NOT NULL,
			data BLOB NOT NULL,
			PRIMARY KEY (message_id, stream, start))`,
	}, then: moveOutputBodies},
	// Zeros keeping a growing stream's rows at chunkSize (output.go).
	{table: "shell_output_chunks", column: "pad", stmts: []string{
		`ALTER TABLE shell_output_chunks ADD COLUMN pad BLOB`,
	}},
	// A message's place in its session's commit order, which lists page on in both
	// directions: its session's message count once it was added (insertMessage). Messages
	// stored before keep their created order, and the counts are made to agree.
	{table: "messages", column: "seq", stmts: []string{
		`ALTER TABLE messages ADD COLUMN seq INTEGER NOT NULL DEFAULT 0`,
		`UPDATE messages SET seq = n.seq FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY session_id ORDER BY created_at, id) AS seq
			FROM messages) AS n WHERE messages.id = n.id`,
		`UPDATE task_sessions SET message_count = (SELECT COUNT(*) FROM messages WHERE session_id = task_sessions.id)`,
		`CREATE UNIQUE INDEX idx_messages_session_seq ON messages (session_id, seq)`,
		`DROP INDEX IF EXISTS idx_messages_session_order`,
	}},
	// Browsers signed in (signin.go).
	{table: "sign_ins", column: "id", stmts: []string{
		`CREATE TABLE sign_ins (
			id TEXT PRIMARY KEY,
			expires_at INTEGER NOT NULL)`,
	}},
	// Its agent was stopped while the session stays: the next prompt starts one (StopSession).
	{table: "task_sessions", column: "stopped", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN stopped BOOLEAN NOT NULL DEFAULT FALSE`,
	}},
	// A task's git repository, base branch, and the branch and worktree made for it.
	{table: "tasks", column: "repo", stmts: []string{
		`ALTER TABLE tasks ADD COLUMN repo TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE tasks ADD COLUMN base_branch TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE tasks ADD COLUMN branch TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE tasks ADD COLUMN worktree TEXT NOT NULL DEFAULT ''`,
	}},
	// The agent's own id of the conversation, and how a new agent takes it up again
	// (SetAgentSession).
	{table: "task_sessions", column: "agent_session", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN agent_session TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE task_sessions ADD COLUMN agent_resume TEXT NOT NULL DEFAULT ''`,
	}},
	// Accounts (account.go): who signs in, their access tokens and invitations (only
	// hashes of secrets), whose sign-in and task each is, the editors a task is shared
	// with, and the audit of what people did.
	{table: "accounts", column: "id", stmts: []string{
		`CREATE TABLE accounts (
			id TEXT PRIMARY KEY,
			login TEXT NOT NULL UNIQUE,
			role TEXT NOT NULL,
			password_hash TEXT NOT NULL DEFAULT '',
			oidc_issuer TEXT NOT NULL DEFAULT '',
			oidc_subject TEXT NOT NULL DEFAULT '',
			created_at INTEGER NOT NULL)`,
		`CREATE UNIQUE INDEX idx_accounts_oidc ON accounts (oidc_issuer, oidc_subject) WHERE oidc_subject <> ''`,
		`CREATE TABLE access_tokens (
			id TEXT PRIMARY KEY,
			account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
			name TEXT NOT NULL,
			hash TEXT NOT NULL UNIQUE,
			created_at INTEGER NOT NULL,
			last_used_at INTEGER NOT NULL DEFAULT 0)`,
		`CREATE INDEX idx_access_tokens_account ON access_tokens (account_id, created_at)`,
		`CREATE TABLE invitations (
			hash TEXT PRIMARY KEY,
			role TEXT NOT NULL,
			expires_at INTEGER NOT NULL)`,
		`ALTER TABLE sign_ins ADD COLUMN account_id TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE tasks ADD COLUMN owner_id TEXT NOT NULL DEFAULT ''`,
		`ALTER TABLE tasks ADD COLUMN owner_login TEXT NOT NULL DEFAULT ''`,
		`CREATE TABLE task_editors (
			task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
			account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
			PRIMARY KEY (task_id, account_id))`,
		`CREATE TABLE audit (
			id TEXT PRIMARY KEY,
			at INTEGER NOT NULL,
			login TEXT NOT NULL,
			action TEXT NOT NULL,
			task_id TEXT NOT NULL DEFAULT '',
			session_id TEXT NOT NULL DEFAULT '',
			message_id TEXT NOT NULL DEFAULT '',
			detail TEXT NOT NULL DEFAULT '')`,
		`CREATE INDEX idx_audit_at ON audit (at, id)`,
	}},
	// The agent's latest usage report (JSON of shared.Usage, SetSessionUsage), and what
	// the agents reported they cost, per session, day and currency (usage.go).
	{table: "task_sessions", column: "usage", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN usage TEXT NOT NULL DEFAULT ''`,
		`CREATE TABLE usage_days (
			session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
			day TEXT NOT NULL,
			currency TEXT NOT NULL,
			task_id TEXT NOT NULL,
			micros INTEGER NOT NULL,
			PRIMARY KEY (session_id, day, currency))`,
		`CREATE INDEX idx_usage_days_day ON usage_days (day)`,
		`CREATE INDEX idx_usage_days_task ON usage_days (task_id)`,
	}},
	// The agent's session config options (JSON of []shared.ConfigOption, SetSessionConfig).
	{table: "task_sessions", column: "config", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN config TEXT NOT NULL DEFAULT ''`,
	}},
	// Read-only links to a task (link.go), stored by the hash of their code, and the
	// sign-ins they made, which end with them.
	{table: "share_links", column: "id", stmts: []string{
		`CREATE TABLE share_links (
			id TEXT PRIMARY KEY,
			task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
			hash TEXT NOT NULL UNIQUE,
			created_by TEXT NOT NULL,
			created_at INTEGER NOT NULL,
			expires_at INTEGER NOT NULL)`,
		`CREATE INDEX idx_share_links_task ON share_links (task_id)`,
		`ALTER TABLE sign_ins ADD COLUMN link_id TEXT NOT NULL DEFAULT ''`,
	}},
	// Search across sessions (search.go): the text each message is found by, indexed the
	// database's way (dialect.searchSchema), and filled from the messages already stored.
	{table: "message_search", column: "body", stmts: []string{
		`CREATE TABLE message_search (
			id INTEGER PRIMARY KEY,
			message_id TEXT NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
			task_id TEXT NOT NULL,
			body TEXT NOT NULL)`,
	}, then: indexAll},
	// A task's additional directories (JSON of []string, CreateTaskOn).
	{table: "tasks", column: "directories", stmts: []string{
		`ALTER TABLE tasks ADD COLUMN directories TEXT NOT NULL DEFAULT ''`,
	}},
	// A replica that drains (Drain) takes no new prompt: 1 from SIGTERM on.
	{table: "replicas", column: "draining", stmts: []string{
		`ALTER TABLE replicas ADD COLUMN draining INTEGER NOT NULL DEFAULT 0`,
	}},
	// Files sent with prompts (attachment.go): uploaded to a session, then bound to the
	// prompt that carried them; and what the agent takes in a prompt (JSON of
	// shared.PromptCapabilities).
	{table: "attachments", column: "id", stmts: []string{
		`CREATE TABLE attachments (
			id TEXT PRIMARY KEY,
			session_id TEXT NOT NULL REFERENCES task_sessions(id) ON DELETE CASCADE,
			message_id TEXT REFERENCES messages(id) ON DELETE CASCADE,
			name TEXT NOT NULL,
			mime_type TEXT NOT NULL,
			size INTEGER NOT NULL,
			data BLOB NOT NULL,
			position INTEGER NOT NULL DEFAULT 0,
			created_at INTEGER NOT NULL)`,
		`CREATE INDEX idx_attachments_session ON attachments (session_id, message_id)`,
		`CREATE INDEX idx_attachments_message ON attachments (message_id)`,
		`ALTER TABLE task_sessions ADD COLUMN prompt_caps TEXT NOT NULL DEFAULT ''`,
	}},
	// Web Push (push.go): the database's one VAPID key pair, so that every server signs
	// with it, and the browsers that asked to be notified.
	{table: "push_keys", column: "id", stmts: []string{
		`CREATE TABLE push_keys (
			id INTEGER PRIMARY KEY,
			private_key TEXT NOT NULL,
			public_key TEXT NOT NULL)`,
		`CREATE TABLE push_subscriptions (
			endpoint TEXT PRIMARY KEY,
			account_id TEXT NOT NULL,
			sign_in_id TEXT NOT NULL DEFAULT '',
			p256dh TEXT NOT NULL,
			auth TEXT NOT NULL,
			every_task BOOLEAN NOT NULL DEFAULT FALSE,
			created_at INTEGER NOT NULL)`,
		`CREATE INDEX idx_push_subscriptions_account ON push_subscriptions (account_id, created_at)`,
	}},
	// What a session's agent and commands may reach (JSON of shared.Sandbox), as it was
	// when its agent last started.
	{table: "task_sessions", column: "sandbox", stmts: []string{
		`ALTER TABLE task_sessions ADD COLUMN sandbox TEXT NOT NULL DEFAULT ''`,
	}},
	// When an access token stops working (0: when revoked).
	{table: "access_tokens", column: "expires_at", stmts: []string{
		`ALTER TABLE access_tokens ADD COLUMN expires_at BIGINT NOT NULL DEFAULT 0`,
	}},
	// Once the markdown trees of the replies and plans stored before (the text copied in,
	// under long names, which the page no longer reads): the next step makes them again,
	// so this one does nothing, and a database that never took it parses them once.
	{},
	// The markdown of agents' replies and plans, parsed when stored (markdown.go), for
	// those stored before, as ranges of their text.
	{then: parseStored},
	// Search inside command output (outsearch.go): the kept text of each stream as
	// documents of one chunk each, indexed the database's way (dialect.searchSchema), and
	// filled from the outputs already stored.
	{table: "output_search", column: "body", stmts: []string{
		`CREATE TABLE output_search (
			id INTEGER PRIMARY KEY,
			message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
			task_id TEXT NOT NULL,
			stream INTEGER NOT NULL,
			start INTEGER NOT NULL,
			stop INTEGER NOT NULL,
			body TEXT NOT NULL)`,
		`CREATE UNIQUE INDEX idx_output_search_stream ON output_search (message_id, stream, start)`,
	}, then: indexOutputs},
	// Attempts (attempt.go): sessions of one prompt, each in a worktree and branch of its
	// own, with the check run after each turn and the bounds of their task. IF NOT
	// EXISTS: a database detected by its columns (one made before schema_version) is
	// taken back to the last step with a column, and this one applied again.
	{table: "attempts", column: "session_id", stmts: []string{
		`CREATE TABLE IF NOT EXISTS attempts (
			session_id TEXT PRIMARY KEY REFERENCES task_sessions(id) ON DELETE CASCADE,
			task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
			n INTEGER NOT NULL,
			branch TEXT NOT NULL,
			worktree TEXT NOT NULL,
			check_command TEXT NOT NULL DEFAULT '',
			max_running INTEGER NOT NULL DEFAULT 0,
			max_cost_micros INTEGER NOT NULL DEFAULT 0,
			outcome TEXT NOT NULL DEFAULT '',
			note TEXT NOT NULL DEFAULT '',
			check_state TEXT NOT NULL DEFAULT '',
			check_message_id TEXT NOT NULL DEFAULT '',
			check_exit INTEGER,
			check_millis INTEGER NOT NULL DEFAULT 0,
			checks INTEGER NOT NULL DEFAULT 0,
			checks_failed INTEGER NOT NULL DEFAULT 0,
			files INTEGER NOT NULL DEFAULT 0,
			added INTEGER NOT NULL DEFAULT 0,
			removed INTEGER NOT NULL DEFAULT 0,
			stats_at INTEGER NOT NULL DEFAULT 0,
			created_at INTEGER NOT NULL,
			ended_at INTEGER NOT NULL DEFAULT 0)`,
		`CREATE UNIQUE INDEX IF NOT EXISTS idx_attempts_task ON attempts (task_id, n)`,
	}},
	// updated_at is nanoseconds; GORM wrote seconds where an update did not name it (the
	// markdown step, a command's output stored when storage was full), so those rows
	// looked changed before they were created.
	{stmts: []string{
		`UPDATE messages SET updated_at = created_at WHERE updated_at < created_at`,
		`UPDATE task_sessions SET updated_at = created_at WHERE updated_at < created_at`,
		`UPDATE tasks SET updated_at = created_at WHERE updated_at < created_at`,
	}},
	// SQLite's output index in partitions of document ids (dialect.outputParts), so that a
	// search reads a common word's list one partition at a time, newest first, not whole.
	{then: partOutputIndex},
	// Runners (runner.go): the tokens they connect with, stored as hashes, and the runner
	// each session was placed on ("" for the server itself).
	{table: "task_sessions", column: "runner", stmts: []string{
		`CREATE TABLE runner_tokens (
			id TEXT PRIMARY KEY,
			name TEXT NOT NULL,
			hash TEXT NOT NULL UNIQUE,
			created_at INTEGER NOT NULL,
			last_used_at INTEGER NOT NULL DEFAULT 0)`,
		`ALTER TABLE task_sessions ADD COLUMN runner TEXT NOT NULL DEFAULT ''`,
	}},
	// The words of the partitions of SQLite's output index (dialect.partWords,
	// partwords.go), so that a search asks only the partitions that may hold its words.
	{then: keepPartWords},
	// Where a runner clones a task's repository (repo_url): the task's worktree is made on
	// the runner its session is placed on (server/worktree, remote.go).
	{table: "tasks", column: "repo_url", stmts: []string{
		`ALTER TABLE tasks ADD COLUMN repo_url TEXT NOT NULL DEFAULT ''`,
	}},
}

// migrate brings the schema to the last step in one transaction (DDL is transactional
// in both databases) under a lock, so that servers starting together on one database take
// turns: PostgreSQL's advisory lock, SQLite's immediate write transaction. A database
// that is up to date costs the lock and one read of its version.
func (s *Store) migrate(ctx context.Context) error { return s.migrateTo(ctx, len(steps)) }

// migrateTo brings the schema to version to (tests make databases of every version).
func (s *Store) migrateTo(ctx context.Context, to int) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.dialect.migrationLock != "" {
			if err := tx.Exec(s.dialect.migrationLock).Error; err != nil {
				return fmt.Errorf("lock the schema: %w", err)
			}
		}
		if err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`).Error; err != nil {
			return fmt.Errorf("create schema_version: %w", err)
		}
		var versions []int
		if err := tx.Raw(`SELECT version FROM schema_version`).Scan(&versions).Error; err != nil {
			return fmt.Errorf("read the schema version: %w", err)
		}
		var version int
		switch len(versions) {
		case 0:
			var err error
			if version, err = detect(tx, s.dialect); err != nil {
				return err
			}
			if err := tx.Exec(`INSERT INTO schema_version (version) VALUES (?)`, version).Error; err != nil {
				return fmt.Errorf("mark the schema version: %w", err)
			}
		case 1:
			version = versions[0]
		default:
			return fmt.Errorf("schema_version holds %d rows, want one", len(versions))
		}
		if version > len(steps) {
			return fmt.Errorf("the database's schema is version %d, newer than this server's %d: run a newer conch", version, len(steps))
		}
		if version >= to {
			return nil
		}
		if err := applySteps(tx, s.dialect, version, to); err != nil {
			return err
		}
		if err := tx.Exec(`UPDATE schema_version SET version = ?`, to).Error; err != nil {
			return fmt.Errorf("mark the schema version: %w", err)
		}
		return nil
	})
}

// detect returns the version of a database without a schema_version row: 0 for a new one,
// else the number of leading steps whose column it has (one made before schema_version,
// which ran the schema's statements on every start). It runs once per database.
func detect(tx *gorm.DB, d *dialect) (int, error) {
	for i, st := range steps {
		if st.column == "" { // no database made before schema_version had it
			return i, nil
		}
		var n int64
		if err := tx.Raw(d.countColumn, st.table, st.column).Scan(&n).Error; err != nil {
			return 0, fmt.Errorf("read the columns of %s: %w", st.table, err)
		}
		if n == 0 {
			return i, nil
		}
	}
	return len(steps), nil
}

// applySteps applies steps[from:to] in tx.
func applySteps(tx *gorm.DB, d *dialect, from, to int) error {
	for i := from; i < to; i++ {
		for _, stmt := range steps[i].stmts {
			if err := tx.Exec(d.ddl(stmt)).Error; err != nil {
				return fmt.Errorf("schema step %d: %w", i+1, err)
			}
		}
		if then := steps[i].then; then != nil {
			if err := then(tx, d); err != nil {
				return fmt.Errorf("schema step %d: %w", i+1, err)
			}
		}
	}
	return nil
}

// moveOutputBodies moves the bodies of shell_outputs into chunks and drops that table.
// The rest of it (exit code, totals, times) is the summary the messages already hold.
func moveOutputBodies(tx *gorm.DB, d *dialect) error {
	for stream, column := range map[int]string{streamStdout: "stdout", streamStderr: "stderr"} {
		// Stored as text without positions is (putStream): ending just before position 0.
		data := fmt.Sprintf(d.textBytes, column)
		if err := tx.Exec(fmt.Sprintf(`INSERT INTO shell_output_chunks (message_id, stream, start, kept_from, data)
			SELECT message_id, %d, -length(%s), -length(%s), %s FROM shell_outputs WHERE %s <> ''`,
			stream, data, data, data, column)).Error; err != nil {
			return fmt.Errorf("move %s bodies into chunks: %w", column, err)
		}
	}
	if err := tx.Exec("DROP TABLE shell_outputs").Error; err != nil {
		return fmt.Errorf("drop shell_outputs: %w", err)
	}
	return nil
}

// partOutputIndex makes the output index again in partitions, where the database has
// them (dialect.outputParts).
func partOutputIndex(tx *gorm.DB, d *dialect) error {
	return execAll(tx, d.outputParts, "partition the output index")
}

// keepPartWords makes the table of the words of the output index's partitions and the
// triggers that keep it true, where the database has partitions (dialect.partWords).
func keepPartWords(tx *gorm.DB, d *dialect) error {
	return execAll(tx, d.partWords, "keep the words of the output index's partitions")
}

// execAll runs stmts in order; what says what they do, for the error.
func execAll(tx *gorm.DB, stmts []string, what string) error {
	for _, stmt := range stmts {
		if err := tx.Exec(stmt).Error; err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}
