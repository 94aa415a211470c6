package api

import (
	"conch/shared"

	"github.com/gofiber/fiber/v2"
)

// route is one route of /api/v1, or a WebSocket action, declared once: New registers a
// route behind the role check (as), TestEveryRouteChecksItsRole calls it as every role,
// and the OpenAPI test makes its path in openapi.json from it (openapi.in.json adds what
// a row cannot say); a WebSocket action needs its row's role (wsAllowed).
type route struct {
	method, path string // path is Fiber's, below /api/v1
	role         string // the least role it needs (shared.Roles)
	in           string // the schema of its JSON body in openapi.json; "" when none or not JSON
	status       int    // of its answer when it succeeds
	out          string // the schema of that answer; "" when none or not JSON
	summary      string // openapi.json adds the role: "Create a task (role: member)"
	action       string // its WebSocket twin, which needs the same role; a row of an action alone has no path
	handle       func(*server, *fiber.Ctx) error
}

// routes is every route of /api/v1, in the order they are registered, and then the
// WebSocket actions that have no route.
var routes = []route{
	{"GET", "/me", shared.RoleViewer, "", 200, "Account", "The account of the request: the server's token is the account `token`, a server without a token has the account `local`", "", (*server).handleMe},
	{"GET", "/tokens", shared.RoleViewer, "", 200, "AccessTokenList", "The personal access tokens of the signed-in account, without their secrets", "", (*server).handleListTokens},
	{"POST", "/tokens", shared.RoleViewer, "NewAccessToken", 201, "AccessToken", "Create a personal access token (`Authorization: Bearer conch_…`); its secret is in this answer only", "", (*server).handleCreateToken},
	{"DELETE", "/tokens/:token_id", shared.RoleViewer, "", 204, "", "Revoke one of the signed-in account's tokens", "", (*server).handleDeleteToken},
	{"GET", "/push/key", shared.RoleViewer, "", 200, "PushServerKey", "The server's VAPID public key, the `applicationServerKey` a browser subscribes with", "", (*server).handlePushKey},
	{"POST", "/push/subscriptions", shared.RoleViewer, "PushSubscription", 201, "PushSubscribed", "Notify this browser: its `PushSubscription` as `toJSON()` gives it, with `every_task` to be told of every task rather than those one owns or edits; it lasts while the sign-in it came through does", "", (*server).handleSubscribePush},
	{"DELETE", "/push/subscriptions", shared.RoleViewer, "PushUnsubscribe", 204, "", "Stop notifying a browser of the account", "", (*server).handleUnsubscribePush},
	{"GET", "/accounts", shared.RoleAdmin, "", 200, "AccountList", "Every account, oldest first", "", (*server).handleListAccounts},
	{"POST", "/accounts", shared.RoleAdmin, "NewAccount", 201, "AccountOrInvitation", "Create an account: with `login` and `password` at once; with neither, an invitation link that sets them", "", (*server).handleCreateAccount},
	{"DELETE", "/accounts/:account_id", shared.RoleAdmin, "", 204, "", "Delete an account with its access tokens and sign-ins, at once on every server", "", (*server).handleDeleteAccount},
	{"GET", "/runners", shared.RoleAdmin, "", 200, "RunnerList", "The runners this server knows (`conch runner`): those connected to it, and those that were since it started, with their labels, capacity and live sessions", "", (*server).handleListRunners},
	{"GET", "/runners/tokens", shared.RoleAdmin, "", 200, "AccessTokenList", "The runner tokens, without their secrets", "", (*server).handleListRunnerTokens},
	{"POST", "/runners/tokens", shared.RoleAdmin, "NewRunnerToken", 201, "AccessToken", "Create a runner token, which `conch runner` connects with; its secret is in this answer only", "", (*server).handleCreateRunnerToken},
	{"DELETE", "/runners/tokens/:token_id", shared.RoleAdmin, "", 204, "", "Revoke a runner token: the runners connected with it are dropped, on every server", "", (*server).handleDeleteRunnerToken},
	{"GET", "/audit", shared.RoleAdmin, "", 200, "", "What people did, as JSON lines (`application/jsonl`), oldest first: every write through the API or the WebSocket that succeeded, with who, when, the route or action, and the ids it named", "", (*server).handleAudit},
	{"GET", "/tasks/:task_id/editors", shared.RoleViewer, "", 200, "EditorList", "The accounts the task is shared with for editing", "", (*server).handleListEditors},
	{"POST", "/tasks/:task_id/editors", shared.RoleMember, "", 200, "Account", "Share the task for editing with an account (its owner or an admin only)", "", (*server).handleAddEditor},
	{"DELETE", "/tasks/:task_id/editors/:account_id", shared.RoleMember, "", 204, "", "Take an editor's access back (the task's owner or an admin only)", "", (*server).handleRemoveEditor},
	{"GET", "/tasks/:task_id/links", shared.RoleMember, "", 200, "ShareLinkList", "The task's share links that still work, without their codes (its owner or an admin only)", "", (*server).handleListLinks},
	{"POST", "/tasks/:task_id/links", shared.RoleMember, "NewShareLink", 201, "ShareLink", "Make a read-only link to the task that works for `days` days, 1 to 30 (its owner or an admin only); opening it signs a browser in as a guest of this task alone", "", (*server).handleCreateLink},
	{"DELETE", "/tasks/:task_id/links/:link_id", shared.RoleMember, "", 204, "", "Revoke a share link: the guests it signed in are signed out at once (the task's owner or an admin only)", "", (*server).handleDeleteLink},
	{"GET", "/agents", shared.RoleViewer, "", 200, "AgentList", "The agent profiles a session can run", "", (*server).handleListAgents},
	{"GET", "/tasks", shared.RoleViewer, "", 200, "TaskList", "Tasks, newest first, each with its sessions", "", (*server).handleListTasks},
	{"POST", "/tasks", shared.RoleMember, "CreateTask", 201, "Task", "Create a task", "", (*server).handleCreateTask},
	{"GET", "/repository", shared.RoleMember, "", 200, "Repository", "What a directory on the server is to git, for the New task form's offer of a worktree", "", (*server).handleRepository},
	{"POST", "/tasks/import", shared.RoleMember, "", 201, "Task", "Import a task from an archive that an export made (`application/gzip`, at most 32 MiB): a new task of the account's, with new ids, its sessions closed, nothing run", "", (*server).handleImport},
	{"GET", "/tasks/:task_id", shared.RoleViewer, "", 200, "Task", "One task, without its sessions", "", (*server).handleGetTask},
	{"GET", "/tasks/:task_id/export", shared.RoleViewer, "", 200, "", "The task as one archive (`application/gzip`, a tar of JSON lines and files): its sessions, messages, outputs, diffs, files, costs, and for an admin its audit entries", "", (*server).handleExport},
	{"DELETE", "/tasks/:task_id", shared.RoleMember, "", 204, "", "Delete a task with its sessions, messages and stored outputs", "", (*server).handleDeleteTask},
	{"POST", "/tasks/:task_id/sessions", shared.RoleMember, "CreateSession", 201, "Session", "Start an agent on a task", "", (*server).handleCreateSession},
	{"GET", "/tasks/:task_id/agent-sessions", shared.RoleMember, "", 200, "AgentSessionPage", "One page of an agent's own earlier sessions in the task's directory (ACP session/list), which the agent is started to list", "", (*server).handleListAgentSessions},
	{"POST", "/tasks/:task_id/agent-sessions/import", shared.RoleMember, "ImportAgentSessions", 201, "ImportedSessions", "Import some of an agent's own earlier sessions as sessions of the task, stopped: each resumes its conversation at its first prompt (ACP session/resume or session/load)", "", (*server).handleImportAgentSessions},
	{"GET", "/tasks/:task_id/changes", shared.RoleViewer, "", 200, "Changes", "What a task on a repository changed, file by file (no diff bodies)", "", (*server).handleChanges},
	{"GET", "/tasks/:task_id/changes/diff", shared.RoleViewer, "", 200, "FileDiff", "One changed file's texts, fetched on demand", "", (*server).handleChangesDiff},
	{"POST", "/tasks/:task_id/commit", shared.RoleMember, "CommitRequest", 200, "Changes", "Commit all of a task's uncommitted work on its branch", "", (*server).handleCommit},
	{"POST", "/tasks/:task_id/merge", shared.RoleMember, "MergeRequest", 200, "Changes", "Bring a task's branch onto its base branch, locally", "", (*server).handleMerge},
	{"POST", "/tasks/:task_id/push", shared.RoleMember, "", 200, "Changes", "Push a task's branch to the repository's remote origin", "", (*server).handlePush},
	{"POST", "/tasks/:task_id/attempts", shared.RoleMember, "AttemptsRequest", 201, "AttemptList", "Give one prompt to several agents, each in a worktree and branch of its own from the task's base, with a check command run after each turn", "", (*server).handleStartAttempts},
	{"GET", "/tasks/:task_id/attempts", shared.RoleViewer, "", 200, "AttemptList", "The task's attempts, for the compare table: how each went, no diff or output body", "", (*server).handleListAttempts},
	{"GET", "/tasks/:task_id/attempts/:session_id/changes", shared.RoleViewer, "", 200, "Changes", "What one attempt changed, file by file (no diff bodies)", "", (*server).handleAttemptChanges},
	{"GET", "/tasks/:task_id/attempts/:session_id/changes/diff", shared.RoleViewer, "", 200, "FileDiff", "One file's texts in one attempt, fetched on demand", "", (*server).handleAttemptDiff},
	{"POST", "/tasks/:task_id/attempts/:session_id/keep", shared.RoleMember, "KeepRequest", 200, "AttemptList", "Keep one attempt: land its branch on the base and close the others (their branches stay)", "", (*server).handleKeepAttempt},
	{"POST", "/tasks/:task_id/review", shared.RoleMember, "Review", 202, "Message", "Send review comments on a task's change to its agent", "", (*server).handleReview},
	{"GET", "/task-sessions/:session_id", shared.RoleViewer, "", 200, "Session", "One session", "", (*server).handleGetSession},
	{"GET", "/task-sessions/:session_id/messages", shared.RoleViewer, "", 200, "MessagePage", "A page of the session's messages (summaries, never output bodies)", shared.ActionMessageList, (*server).handleListMessages},
	{"POST", "/task-sessions/:session_id/messages", shared.RoleMember, "AddMessage", 202, "Message", "Send a prompt; the agent's turn runs in the background", shared.ActionMessageAdd, (*server).handleAddMessage},
	{"POST", "/task-sessions/:session_id/cancel", shared.RoleMember, "", 202, "Session", "Cancel the running turn (ACP session/cancel)", "", (*server).handleCancel},
	{"POST", "/task-sessions/:session_id/stop", shared.RoleMember, "", 200, "Session", "Stop the session's agent; the session stays, and its next prompt starts a new agent", shared.ActionStop, (*server).handleStop},
	{"POST", "/task-sessions/:session_id/resume", shared.RoleMember, "", 200, "Session", "Start a stopped session's agent again, which resumes the conversation (ACP session/resume or session/load), with no prompt", shared.ActionResume, (*server).handleResume},
	{"POST", "/task-sessions/:session_id/messages/:message_id/fork", shared.RoleMember, "", 201, "Fork", "Fork from here: a new session of the task and agent from one of the agent's replies; the agent forks its own session when it can (ACP session/fork), else the answer's `draft` summarizes the conversation up to the reply, to edit and send", "", (*server).handleFork},
	{"GET", "/usage", shared.RoleViewer, "", 200, "UsageReport", "What the agents reported they cost, per day and per task (ACP usage_update)", "", (*server).handleUsage},
	{"GET", "/search", shared.RoleViewer, "", 200, "SearchPage", "Search prompts, agent messages, shell commands and their output across sessions", "", (*server).handleSearch},
	{"POST", "/task-sessions/:session_id/mode", shared.RoleMember, "ModeRequest", 200, "Session", "Switch the agent's session mode", shared.ActionSetMode, (*server).handleSetMode},
	{"POST", "/task-sessions/:session_id/config", shared.RoleMember, "ConfigRequest", 200, "Session", "Set one of the agent's config options", shared.ActionSetConfig, (*server).handleSetConfig},
	{"GET", "/task-sessions/:session_id/messages/:message_id/shell-output", shared.RoleViewer, "", 200, "ShellOutputSnapshot", "A command's whole stored output", "", (*server).handleShellOutput},
	{"GET", "/messages/:message_id", shared.RoleViewer, "", 200, "Message", "One message by id alone (its summary, never a body)", "", (*server).handleGetMessage},
	{"GET", "/openapi.json", shared.RoleViewer, "", 200, "", "This document", "", (*server).handleOpenAPI},
	{"GET", "/task-sessions/:session_id/messages/:message_id/shell-output/raw", shared.RoleViewer, "", 200, "", "One stream of a command's stored output, as a text file to save", "", (*server).handleShellOutputRaw},
	{"GET", "/task-sessions/:session_id/messages/:message_id/tool-content", shared.RoleViewer, "", 200, "ToolContentSnapshot", "A tool call's content (diffs, texts), fetched on demand", "", (*server).handleToolContent},
	{"GET", "/task-sessions/:session_id/messages/:message_id/error-detail", shared.RoleViewer, "", 200, "ErrorDetail", "An error message's whole text, fetched on demand", "", (*server).handleErrorDetail},
	{"POST", "/task-sessions/:session_id/permissions/:message_id", shared.RoleMember, "PermissionAnswer", 200, "Message", "Answer a permission request with one of the options the agent offered", shared.ActionPermissionAnswer, (*server).handleAnswerPermission},
	{"POST", "/task-sessions/:session_id/elicitations/:message_id", shared.RoleMember, "ElicitationAnswer", 200, "Message", "Answer an agent's question: accept with the form's content, decline or cancel", shared.ActionElicitationAnswer, (*server).handleAnswerElicitation},
	{"POST", "/task-sessions/:session_id/attachments", shared.RoleMember, "", 201, "Attachment", "Upload a file for a prompt of the session to carry", "", (*server).handleUploadAttachment},
	{"GET", "/task-sessions/:session_id/attachments/:attachment_id", shared.RoleViewer, "", 200, "", "A file uploaded to the session", "", (*server).handleGetAttachment},
	{"", "", shared.RoleViewer, "", 0, "", "Live updates of the task list", shared.ActionTasksSubscribe, nil},
	{"", "", shared.RoleViewer, "", 0, "", "Live updates of a session", shared.ActionSubscribe, nil},
	{"", "", shared.RoleViewer, "", 0, "", "No more live updates of a session", shared.ActionUnsubscribe, nil},
}

// wsNeeds is the least role of each WebSocket action: its row's.
var wsNeeds = func() map[string]string {
	needs := map[string]string{}
	for _, r := range routes {
		if r.action != "" {
			needs[r.action] = r.role
		}
	}
	return needs
}()

func (s *server) handleOpenAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(OpenAPI)
}
