package opencode

import (
	"net/http"
	"reflect"

	"github.com/agentpool/agentpool/server/opencode/internal/wire"
)

// route is one served operation: the handler and what /doc says of it.
type route struct {
	method, path string
	op, summary  string
	tag          string
	query        []param
	body         reflect.Type // request body (nil: none)
	bodyOptional bool
	status       int          // success status
	resp         reflect.Type // success body (nil: none)
	respSchema   map[string]any
	sse          string // an event stream of this component
	errs         []int
	errTypes     map[int][]reflect.Type // error bodies other than the usual ones
	handler      http.HandlerFunc
}

// param is a query parameter.
type param struct {
	name   string
	schema map[string]any
	desc   string
}

var (
	strParam  = map[string]any{"type": "string"}
	numParam  = map[string]any{"type": "number"}
	intParam  = map[string]any{"type": "integer", "minimum": 0}
	boolParam = map[string]any{"anyOf": []any{map[string]any{"type": "boolean"}, map[string]any{"type": "string", "enum": []any{"true", "false"}}}}
)

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// routeTable is every route the server serves; /doc is generated from it.
func (s *Server) routeTable() []*route {
	sessionPath := "/session/{sessionID}"
	branch := &branchAPI{s.base}
	revert := &revertAPI{s.base}
	return []*route{
		{method: "GET", path: "/session", op: "session.list", summary: "List sessions", tag: "session",
			query: []param{
				{"roots", boolParam, "only root sessions (no parentID)"},
				{"start", numParam, "only sessions updated at or after this time (Unix milliseconds)"},
				{"search", strParam, "only sessions whose title contains this text"},
				{"limit", numParam, "at most this many sessions"},
			},
			resp: typeOf[[]wire.Session](), errs: []int{400}, handler: s.sessions.handleListSessions},
		{method: "POST", path: "/session", op: "session.create", summary: "Create session", tag: "session",
			body: typeOf[wire.CreateSessionBody](), bodyOptional: true, resp: typeOf[wire.Session](), errs: []int{400, 404, 408, 413}, handler: s.sessions.handleCreateSession},
		{method: "GET", path: "/session/status", op: "session.status", summary: "Get session status (running sessions only)", tag: "session",
			resp: typeOf[map[string]wire.SessionStatus](), handler: s.sessions.handleStatus},
		{method: "GET", path: sessionPath, op: "session.get", summary: "Get session", tag: "session",
			resp: typeOf[wire.Session](), errs: []int{404}, handler: s.sessions.handleGetSession},
		{method: "PATCH", path: sessionPath, op: "session.update", summary: "Update session", tag: "session",
			body: typeOf[wire.UpdateSessionBody](), resp: typeOf[wire.Session](), errs: []int{400, 404, 408, 413}, handler: s.sessions.handleUpdateSession},
		{method: "DELETE", path: sessionPath, op: "session.delete", summary: "Delete session and its subtree", tag: "session",
			respSchema: map[string]any{"type": "boolean"}, errs: []int{404}, handler: s.sessions.handleDeleteSession},
		{method: "GET", path: sessionPath + "/children", op: "session.children", summary: "Get session children", tag: "session",
			resp: typeOf[[]wire.Session](), errs: []int{404}, handler: s.sessions.handleChildren},
		{method: "GET", path: sessionPath + "/message", op: "session.messages", summary: "Get session messages", tag: "session",
			query: []param{
				{"limit", intParam, "only the last N messages"},
				{"before", strParam, "only the messages before this message id"},
			},
			resp: typeOf[[]wire.MessageWithParts](), errs: []int{400, 404}, handler: s.history.handleMessages},
		{method: "GET", path: sessionPath + "/diff", op: "session.diff", summary: "Files the session's tools changed", tag: "session",
			query: []param{{"messageID", strParam, "accepted and ignored: the whole session's changes are answered"}},
			resp:  typeOf[[]wire.SnapshotFileDiff](), errs: []int{404}, handler: s.sessions.handleSessionDiff},
		{method: "GET", path: sessionPath + "/todo", op: "session.todo", summary: "Get session todos", tag: "session",
			resp: typeOf[[]wire.Todo](), errs: []int{404}, handler: s.history.handleTodo},
		{method: "POST", path: sessionPath + "/message", op: "session.prompt", summary: "Send message (waits for the turn to end)", tag: "session",
			body: typeOf[wire.PromptBody](), resp: typeOf[wire.AssistantWithParts](), errs: []int{400, 404, 408, 409, 413, 429}, handler: s.prompts.handlePrompt},
		{method: "POST", path: sessionPath + "/prompt_async", op: "session.prompt_async", summary: "Send async message", tag: "session",
			body: typeOf[wire.PromptBody](), status: http.StatusNoContent, errs: []int{400, 404, 408, 409, 413, 429}, handler: s.prompts.handlePromptAsync},
		{method: "POST", path: sessionPath + "/abort", op: "session.abort", summary: "Abort session", tag: "session",
			respSchema: map[string]any{"type": "boolean"}, errs: []int{404}, handler: s.prompts.handleAbort},
		{method: "POST", path: sessionPath + "/summarize", op: "session.summarize", summary: "Summarize session: its older turns become one summary message (compaction)", tag: "session",
			body: typeOf[wire.SummarizeBody](), respSchema: map[string]any{"type": "boolean"},
			errTypes: map[int][]reflect.Type{400: {typeOf[wire.InvalidRequestError]()}},
			errs:     []int{400, 404, 408, 413}, handler: s.commands.handleSummarize},
		{method: "POST", path: sessionPath + "/fork", op: "session.fork", summary: "Fork session: a new session with the messages before messageID (all without it)", tag: "session",
			body: typeOf[wire.ForkBody](), bodyOptional: true, resp: typeOf[wire.Session](), errs: []int{400, 404, 408, 413}, handler: branch.handleFork},
		{method: "POST", path: sessionPath + "/share", op: "session.share", summary: "Share session (not available: a 400 that says so)", tag: "session",
			resp: typeOf[wire.Session](), errs: []int{400, 404}, handler: branch.handleShare},
		{method: "DELETE", path: sessionPath + "/share", op: "session.unshare", summary: "Unshare session (not available: a 400 that says so)", tag: "session",
			resp: typeOf[wire.Session](), errs: []int{400, 404}, handler: branch.handleShare},
		{method: "POST", path: sessionPath + "/init", op: "session.init", summary: "Initialize session: the agent writes AGENTS.md for the project (the TUI's /init)", tag: "session",
			body: typeOf[wire.InitBody](), respSchema: map[string]any{"type": "boolean"}, errs: []int{400, 404, 408, 409, 413, 429}, handler: s.commands.handleInit},
		{method: "POST", path: sessionPath + "/revert", op: "session.revert", summary: "Revert message: the session's files and conversation back to just before messageID (checkpoint.Rewind)", tag: "session",
			query: []param{{"mode", strParam, "code, conversation or both (the default): what goes back (agentpool)"}},
			body:  typeOf[wire.RevertBody](), resp: typeOf[wire.Session](), errs: []int{400, 404, 408, 413}, handler: revert.handleRevert},
		{method: "POST", path: sessionPath + "/unrevert", op: "session.unrevert", summary: "Restore reverted messages: the last revert taken back (checkpoint.Undo)", tag: "session",
			resp: typeOf[wire.Session](), errs: []int{400, 404}, handler: revert.handleUnrevert},
		{method: "POST", path: sessionPath + "/shell", op: "session.shell", summary: "Run a shell command (the TUI's !cmd) through the session agent's Bash tool", tag: "session",
			body: typeOf[wire.ShellBody](), resp: typeOf[wire.AssistantWithParts](), errs: []int{400, 404, 408, 413}, handler: s.commands.handleShell},
		{method: "GET", path: "/event", op: "event.subscribe", summary: "Subscribe to events", tag: "event",
			sse: "Event", handler: s.streams.handleEvents},
		{method: "GET", path: "/global/event", op: "global.event", summary: "Get global events", tag: "global",
			sse: "GlobalEvent", handler: s.streams.handleGlobalEvents},
		{method: "GET", path: "/path", op: "path.get", summary: "Get paths", tag: "instance",
			resp: typeOf[wire.Path](), handler: s.config.handlePath},
		{method: "GET", path: "/config", op: "config.get", summary: "Get configuration", tag: "config",
			resp: typeOf[wire.Config](), handler: s.config.handleConfig},
		{method: "GET", path: "/config/providers", op: "config.providers", summary: "List config providers", tag: "config",
			resp: typeOf[wire.Providers](), handler: s.config.handleProviders},
		{method: "GET", path: "/agent", op: "app.agents", summary: "List agents", tag: "instance",
			resp: typeOf[[]wire.Agent](), handler: s.config.handleAgents},
		{method: "GET", path: "/project/current", op: "project.current", summary: "Get current project", tag: "project",
			resp: typeOf[wire.Project](), handler: s.config.handleProject},
		{method: "GET", path: "/global/health", op: "global.health", summary: "Get health", tag: "global",
			resp: typeOf[wire.Health](), handler: s.config.handleHealth},
		{method: "GET", path: "/provider", op: "provider.list", summary: "List providers (all connected)", tag: "provider",
			resp: typeOf[wire.ProviderList](), handler: s.config.handleProviderList},
		{method: "GET", path: "/provider/auth", op: "provider.auth", summary: "Provider log-in methods (none: the pool holds the keys)", tag: "provider",
			respSchema: map[string]any{"type": "object"}, handler: emptyObject},
		{method: "GET", path: "/command", op: "command.list", summary: "List commands (the project's slash commands)", tag: "command",
			resp: typeOf[[]wire.Command](), handler: s.commands.handleCommands},
		{method: "POST", path: sessionPath + "/command", op: "session.command", summary: "Run a slash command (as a message)", tag: "session",
			body: typeOf[wire.CommandBody](), resp: typeOf[wire.AssistantWithParts](), errs: []int{400, 404, 408, 409, 413, 429}, handler: s.commands.handleCommand},
		{method: "GET", path: "/skill", op: "app.skills", summary: "List skills (none)", tag: "instance",
			respSchema: map[string]any{"type": "array"}, handler: emptyList},
		{method: "GET", path: "/mcp", op: "mcp.status", summary: "MCP server status", tag: "mcp",
			resp: typeOf[map[string]wire.MCPStatus](), handler: s.instance.handleMCP},
		{method: "GET", path: "/lsp", op: "lsp.status", summary: "LSP server status (none)", tag: "lsp",
			respSchema: map[string]any{"type": "array"}, handler: emptyList},
		{method: "GET", path: "/formatter", op: "formatter.status", summary: "Formatter status (none)", tag: "formatter",
			respSchema: map[string]any{"type": "array"}, handler: emptyList},
		{method: "GET", path: "/vcs", op: "vcs.get", summary: "Git branch of the directory", tag: "vcs",
			resp: typeOf[wire.VcsInfo](), handler: s.instance.handleVcs},
		{method: "GET", path: "/permission", op: "permission.list", summary: "Pending permission requests (tool calls waiting for the user), oldest first", tag: "permission",
			resp: typeOf[[]wire.PermissionRequest](), handler: s.perms.handleList},
		{method: "POST", path: "/permission/{requestID}/reply", op: "permission.reply", summary: "Respond to permission request", tag: "permission",
			body: typeOf[wire.PermissionReplyBody](), respSchema: map[string]any{"type": "boolean"},
			errTypes: map[int][]reflect.Type{400: {typeOf[wire.InvalidRequestError]()}, 404: {typeOf[wire.PermissionNotFoundError]()}},
			errs:     []int{400, 404, 408, 413}, handler: s.perms.handleReply},
		{method: "POST", path: sessionPath + "/permissions/{permissionID}", op: "permission.respond", summary: "Respond to permission (deprecated)", tag: "session",
			body: typeOf[wire.PermissionRespondBody](), respSchema: map[string]any{"type": "boolean"},
			errTypes: map[int][]reflect.Type{400: {typeOf[wire.InvalidRequestError]()}, 404: {typeOf[wire.NotFoundError](), typeOf[wire.PermissionNotFoundError]()}},
			errs:     []int{400, 404, 408, 413}, handler: s.perms.handleRespond},
		{method: "GET", path: "/question", op: "question.list", summary: "Pending questions (none)", tag: "question",
			respSchema: map[string]any{"type": "array"}, handler: emptyList},
		{method: "GET", path: "/project/{projectID}/directories", op: "project.directories", summary: "Project directories", tag: "project",
			resp: typeOf[[]wire.ProjectDirectory](), handler: s.instance.handleDirectories},
		{method: "GET", path: "/experimental/capabilities", op: "experimental.capabilities.get", summary: "Experimental capabilities", tag: "experimental",
			resp: typeOf[wire.ExperimentalCapabilities](), handler: s.instance.handleCapabilities},
		{method: "GET", path: "/experimental/console", op: "experimental.console.get", summary: "Console state (no console account)", tag: "experimental",
			resp: typeOf[wire.ConsoleState](), handler: s.instance.handleConsole},
		{method: "GET", path: "/experimental/workspace", op: "experimental.workspace.list", summary: "Workspaces (none)", tag: "experimental",
			respSchema: map[string]any{"type": "array"}, handler: emptyList},
		{method: "GET", path: "/experimental/workspace/status", op: "experimental.workspace.status", summary: "Workspace status (none)", tag: "experimental",
			respSchema: map[string]any{"type": "array"}, handler: emptyList},
		{method: "GET", path: "/experimental/resource", op: "experimental.resource.list", summary: "MCP resources (none listed)", tag: "experimental",
			respSchema: map[string]any{"type": "object"}, handler: emptyObject},
		{method: "GET", path: "/api/location", op: "v2.location.get", summary: "Location of the request", tag: "v2",
			resp: typeOf[wire.LocationInfo](), handler: s.instance.handleLocation},
		{method: "GET", path: "/api/agent", op: "v2.agent.list", summary: "Empty list (see docs/opencode.md)", tag: "v2",
			resp: typeOf[wire.V2List](), handler: s.instance.handleEmptyV2List},
		{method: "GET", path: "/api/command", op: "v2.command.list", summary: "Empty list (see docs/opencode.md)", tag: "v2",
			resp: typeOf[wire.V2List](), handler: s.instance.handleEmptyV2List},
		{method: "GET", path: "/api/integration", op: "v2.integration.list", summary: "Empty list (see docs/opencode.md)", tag: "v2",
			resp: typeOf[wire.V2List](), handler: s.instance.handleEmptyV2List},
		{method: "GET", path: "/api/model", op: "v2.model.list", summary: "Empty list (see docs/opencode.md)", tag: "v2",
			resp: typeOf[wire.V2List](), handler: s.instance.handleEmptyV2List},
		{method: "GET", path: "/api/provider", op: "v2.provider.list", summary: "Empty list (see docs/opencode.md)", tag: "v2",
			resp: typeOf[wire.V2List](), handler: s.instance.handleEmptyV2List},
		{method: "GET", path: "/api/reference", op: "v2.reference.list", summary: "Empty list (see docs/opencode.md)", tag: "v2",
			resp: typeOf[wire.V2List](), handler: s.instance.handleEmptyV2List},
		{method: "GET", path: "/api/skill", op: "v2.skill.list", summary: "Empty list (see docs/opencode.md)", tag: "v2",
			resp: typeOf[wire.V2List](), handler: s.instance.handleEmptyV2List},
		{method: "GET", path: "/doc", op: "app.doc", summary: "This OpenAPI document", tag: "instance",
			respSchema: map[string]any{"type": "object"}, handler: s.handleDoc},
	}
}
