// Package wire holds the wire types of the OpenCode server API.
package wire

import (
	"encoding/json"
)

// The wire types of the OpenCode server API (opencode 1.18.33). Field names
// and required fields follow the OpenAPI document that opencode serves at
// /doc. Struct tags drive both encoding/json and the schemas of this
// server's own /doc (openapi.go): a field without omitempty is required;
// `enum:"a,b"` lists the allowed values; `pattern:"^ses"` constrains a
// string; `union:"Name"` makes an interface field (or the items of a slice
// of interfaces) a $ref to the anyOf component Name (see unions).

// Session is OpenCode's session info.
type Session struct {
	ID        string        `json:"id" pattern:"^ses"`
	Slug      string        `json:"slug"`
	ProjectID string        `json:"projectID"`
	Directory string        `json:"directory"`
	ParentID  string        `json:"parentID,omitempty" pattern:"^ses"`
	Title     string        `json:"title"`
	Version   string        `json:"version"`
	Agent     string        `json:"agent,omitempty"`
	Model     *SessionModel `json:"model,omitempty"`
	Time      SessionTime   `json:"time"`
	Cost      float64       `json:"cost"`
	Tokens    Tokens        `json:"tokens"`
	// Revert is set while the session stands reverted (POST .../revert)
	// and not yet unreverted nor gone on.
	Revert *SessionRevert `json:"revert,omitempty"`
	// Metadata is OpenCode's free-form session metadata; agentpool puts
	// the stored record's facts under "agentpool" (status, stopReason,
	// error, durationMs, own tokens and cost).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// SessionRevert is a session's revert point: the message the session was
// taken back to (its files and conversation as they were before it).
type SessionRevert struct {
	MessageID string `json:"messageID" pattern:"^msg"`
	PartID    string `json:"partID,omitempty" pattern:"^prt"`
	Snapshot  string `json:"snapshot,omitempty"`
	Diff      string `json:"diff,omitempty"`
}

// SessionModel names a session's model.
type SessionModel struct {
	ID         string `json:"id"`
	ProviderID string `json:"providerID"`
}

// SessionTime holds Unix milliseconds.
type SessionTime struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

// Tokens counts tokens (sessions, assistant messages, step-finish parts).
type Tokens struct {
	Input     int64       `json:"input"`
	Output    int64       `json:"output"`
	Reasoning int64       `json:"reasoning"`
	Cache     TokensCache `json:"cache"`
}

// TokensCache counts cached tokens.
type TokensCache struct {
	Read  int64 `json:"read"`
	Write int64 `json:"write"`
}

// SessionStatus is {type: busy} (idle sessions are absent from
// GET /session/status; session.status events also carry {type: idle}).
type SessionStatus struct {
	Type string `json:"type" enum:"idle,busy"`
}

// ModelRef names a provider's model.
type ModelRef struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

// UserMessage is the info of a user message.
type UserMessage struct {
	ID        string          `json:"id" pattern:"^msg"`
	SessionID string          `json:"sessionID" pattern:"^ses"`
	Role      string          `json:"role" enum:"user"`
	Time      UserMessageTime `json:"time"`
	Agent     string          `json:"agent"`
	Model     ModelRef        `json:"model"`
	System    string          `json:"system,omitempty"`
	Tools     map[string]bool `json:"tools,omitempty"`
}

// UserMessageTime holds Unix milliseconds.
type UserMessageTime struct {
	Created int64 `json:"created"`
}

// AssistantMessage is the info of an assistant message: one model response
// (one step) of a session.
type AssistantMessage struct {
	ID         string        `json:"id" pattern:"^msg"`
	SessionID  string        `json:"sessionID" pattern:"^ses"`
	Role       string        `json:"role" enum:"assistant"`
	Time       AssistantTime `json:"time"`
	Error      any           `json:"error,omitempty" union:"MessageError"`
	ParentID   string        `json:"parentID" pattern:"^msg"`
	ModelID    string        `json:"modelID"`
	ProviderID string        `json:"providerID"`
	Mode       string        `json:"mode"`
	Agent      string        `json:"agent"`
	Path       MessagePath   `json:"path"`
	Cost       float64       `json:"cost"`
	Tokens     Tokens        `json:"tokens"`
	Finish     string        `json:"finish,omitempty"`
}

// AssistantTime holds Unix milliseconds; Completed is 0 while the message
// is open.
type AssistantTime struct {
	Created   int64 `json:"created"`
	Completed int64 `json:"completed,omitempty"`
}

// MessagePath is where an assistant message ran.
type MessagePath struct {
	Cwd  string `json:"cwd"`
	Root string `json:"root"`
}

// UnknownError is a failed run's error.
type UnknownError struct {
	Name string    `json:"name" enum:"UnknownError"`
	Data ErrorData `json:"data"`
}

// MessageAbortedError is the error of an aborted run.
type MessageAbortedError struct {
	Name string    `json:"name" enum:"MessageAbortedError"`
	Data ErrorData `json:"data"`
}

// ErrorData carries an error's message.
type ErrorData struct {
	Message string `json:"message"`
}

// TextPart is text a user typed or a model wrote.
type TextPart struct {
	ID        string    `json:"id" pattern:"^prt"`
	SessionID string    `json:"sessionID" pattern:"^ses"`
	MessageID string    `json:"messageID" pattern:"^msg"`
	Type      string    `json:"type" enum:"text"`
	Text      string    `json:"text"`
	Synthetic bool      `json:"synthetic,omitempty"`
	Time      *PartTime `json:"time,omitempty"`
}

// ReasoningPart is a model's thinking.
type ReasoningPart struct {
	ID        string   `json:"id" pattern:"^prt"`
	SessionID string   `json:"sessionID" pattern:"^ses"`
	MessageID string   `json:"messageID" pattern:"^msg"`
	Type      string   `json:"type" enum:"reasoning"`
	Text      string   `json:"text"`
	Time      PartTime `json:"time"`
}

// PartTime holds Unix milliseconds; End is 0 while the part is open.
type PartTime struct {
	Start int64 `json:"start"`
	End   int64 `json:"end,omitempty"`
}

// ToolPart is a tool call and its state.
type ToolPart struct {
	ID        string `json:"id" pattern:"^prt"`
	SessionID string `json:"sessionID" pattern:"^ses"`
	MessageID string `json:"messageID" pattern:"^msg"`
	Type      string `json:"type" enum:"tool"`
	CallID    string `json:"callID"`
	Tool      string `json:"tool"`
	State     any    `json:"state" union:"ToolState"`
}

// StepStartPart opens a step (a model response).
type StepStartPart struct {
	ID        string `json:"id" pattern:"^prt"`
	SessionID string `json:"sessionID" pattern:"^ses"`
	MessageID string `json:"messageID" pattern:"^msg"`
	Type      string `json:"type" enum:"step-start"`
}

// StepFinishPart closes a step.
type StepFinishPart struct {
	ID        string  `json:"id" pattern:"^prt"`
	SessionID string  `json:"sessionID" pattern:"^ses"`
	MessageID string  `json:"messageID" pattern:"^msg"`
	Type      string  `json:"type" enum:"step-finish"`
	Reason    string  `json:"reason"`
	Cost      float64 `json:"cost"`
	Tokens    Tokens  `json:"tokens"`
}

// AgentPart is an @agent mention in a user message.
type AgentPart struct {
	ID        string `json:"id" pattern:"^prt"`
	SessionID string `json:"sessionID" pattern:"^ses"`
	MessageID string `json:"messageID" pattern:"^msg"`
	Type      string `json:"type" enum:"agent"`
	Name      string `json:"name"`
}

// SubtaskPart asks for a subagent run in a user message.
type SubtaskPart struct {
	ID          string `json:"id" pattern:"^prt"`
	SessionID   string `json:"sessionID" pattern:"^ses"`
	MessageID   string `json:"messageID" pattern:"^msg"`
	Type        string `json:"type" enum:"subtask"`
	Prompt      string `json:"prompt"`
	Description string `json:"description"`
	Agent       string `json:"agent"`
}

// Tool states (ToolPart.State).
type (
	// ToolStatePending: the call is being streamed.
	ToolStatePending struct {
		Status string          `json:"status" enum:"pending"`
		Input  json.RawMessage `json:"input" type:"object"`
		Raw    string          `json:"raw"`
	}
	// ToolStateRunning: the tool runs (a task tool's metadata names the
	// child session: sessionId, parentSessionId).
	ToolStateRunning struct {
		Status   string          `json:"status" enum:"running"`
		Input    json.RawMessage `json:"input" type:"object"`
		Title    string          `json:"title,omitempty"`
		Metadata map[string]any  `json:"metadata,omitempty"`
		Time     ToolTimeStart   `json:"time"`
	}
	// ToolStateCompleted: the tool returned.
	ToolStateCompleted struct {
		Status   string          `json:"status" enum:"completed"`
		Input    json.RawMessage `json:"input" type:"object"`
		Output   string          `json:"output"`
		Title    string          `json:"title"`
		Metadata map[string]any  `json:"metadata"`
		Time     ToolTime        `json:"time"`
	}
	// ToolStateError: the tool failed.
	ToolStateError struct {
		Status   string          `json:"status" enum:"error"`
		Input    json.RawMessage `json:"input" type:"object"`
		Error    string          `json:"error"`
		Metadata map[string]any  `json:"metadata,omitempty"`
		Time     ToolTime        `json:"time"`
	}
)

// ToolTimeStart holds Unix milliseconds.
type ToolTimeStart struct {
	Start int64 `json:"start"`
}

// ToolTime holds Unix milliseconds.
type ToolTime struct {
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Todo is one item of a session's todo list (GET /session/{id}/todo,
// todo.updated, a todowrite part's metadata).
type Todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

// MessageWithParts is one entry of GET /session/{id}/message.
type MessageWithParts struct {
	Info  any   `json:"info" union:"Message"`
	Parts []any `json:"parts" union:"Part"`
}

// AssistantWithParts is the answer of POST /session/{id}/message.
type AssistantWithParts struct {
	Info  any   `json:"info" union:"Message"`
	Parts []any `json:"parts" union:"Part"`
}

// Errors (response bodies).
type (
	// NotFoundError answers an unknown id (404).
	NotFoundError struct {
		Name string    `json:"name" enum:"NotFoundError"`
		Data ErrorData `json:"data"`
	}
	// BadRequestError answers a malformed request (400, and 413 for a body
	// over the size limit).
	BadRequestError struct {
		Name string         `json:"name" enum:"BadRequest"`
		Data BadRequestData `json:"data"`
	}
	// SessionBusyError answers a prompt for a session that runs in a run
	// this server did not start (a subagent at work, for example): 409.
	SessionBusyError struct {
		Tag       string `json:"_tag" enum:"SessionBusyError"`
		SessionID string `json:"sessionID"`
		Message   string `json:"message"`
	}
	// QueueFullError answers a prompt past the prompt budget (429): its
	// session or the server holds as many prompts, or as many bytes of
	// them, as allowed; the message names the bound.
	QueueFullError struct {
		Name string    `json:"name" enum:"QueueFullError"`
		Data ErrorData `json:"data"`
	}
	// BadRequestData says what was wrong and where (Params, Query, Body).
	BadRequestData struct {
		Message string `json:"message"`
		Kind    string `json:"kind,omitempty" enum:"Params,Headers,Query,Body,Payload"`
	}
)

// Other responses.
type (
	// Path is GET /path.
	Path struct {
		Home      string `json:"home"`
		State     string `json:"state"`
		Config    string `json:"config"`
		Worktree  string `json:"worktree"`
		Directory string `json:"directory"`
	}
	// Project is GET /project/current.
	Project struct {
		ID        string      `json:"id"`
		Worktree  string      `json:"worktree"`
		Name      string      `json:"name,omitempty"`
		Time      ProjectTime `json:"time"`
		Sandboxes []string    `json:"sandboxes"`
	}
	// ProjectTime holds Unix milliseconds.
	ProjectTime struct {
		Created int64 `json:"created"`
		Updated int64 `json:"updated"`
	}
	// Health is GET /global/health.
	Health struct {
		Healthy bool   `json:"healthy" enum:"true"`
		Version string `json:"version"`
	}
	// Agent is one entry of GET /agent: a node (agent or team) of the pool.
	Agent struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Mode        string         `json:"mode" enum:"subagent,primary,all"`
		Native      bool           `json:"native"`
		Permission  []any          `json:"permission"`
		Model       *ModelRef      `json:"model,omitempty"`
		Prompt      string         `json:"prompt,omitempty"`
		Options     map[string]any `json:"options"`
	}
	// Providers is GET /config/providers.
	Providers struct {
		Providers []Provider        `json:"providers"`
		Default   map[string]string `json:"default"`
	}
	// Provider is one model provider of the pool's agents.
	Provider struct {
		ID      string           `json:"id"`
		Name    string           `json:"name"`
		Source  string           `json:"source" enum:"env,config,custom,api"`
		Env     []string         `json:"env"`
		Options map[string]any   `json:"options"`
		Models  map[string]Model `json:"models"`
	}
	// Model is one model of a provider.
	Model struct {
		ID           string            `json:"id"`
		ProviderID   string            `json:"providerID"`
		API          ModelAPI          `json:"api"`
		Name         string            `json:"name"`
		Capabilities ModelCaps         `json:"capabilities"`
		Cost         ModelCost         `json:"cost"`
		Limit        ModelLimit        `json:"limit"`
		Status       string            `json:"status" enum:"alpha,beta,deprecated,active"`
		Options      map[string]any    `json:"options"`
		Headers      map[string]string `json:"headers"`
		ReleaseDate  string            `json:"release_date"`
	}
	// ModelAPI says how a model is reached.
	ModelAPI struct {
		ID  string `json:"id"`
		URL string `json:"url"`
		Npm string `json:"npm"`
	}
	// ModelCaps are a model's capabilities.
	ModelCaps struct {
		Temperature bool          `json:"temperature"`
		Reasoning   bool          `json:"reasoning"`
		Attachment  bool          `json:"attachment"`
		Toolcall    bool          `json:"toolcall"`
		Input       ModelModality `json:"input"`
		Output      ModelModality `json:"output"`
		Interleaved bool          `json:"interleaved"`
	}
	// ModelModality lists what a model reads or writes.
	ModelModality struct {
		Text  bool `json:"text"`
		Audio bool `json:"audio"`
		Image bool `json:"image"`
		Video bool `json:"video"`
		PDF   bool `json:"pdf"`
	}
	// ModelCost is USD per million tokens.
	ModelCost struct {
		Input  float64     `json:"input"`
		Output float64     `json:"output"`
		Cache  TokensPrice `json:"cache"`
	}
	// TokensPrice is USD per million cached tokens.
	TokensPrice struct {
		Read  float64 `json:"read"`
		Write float64 `json:"write"`
	}
	// ModelLimit is a model's token limits (0: unknown).
	ModelLimit struct {
		Context int64 `json:"context"`
		Output  int64 `json:"output"`
	}
	// ProviderList is GET /provider: every provider the pool's agents use
	// (all of them connected: the pool holds their keys, the client needs
	// none) and the default model of each.
	ProviderList struct {
		All       []Provider        `json:"all"`
		Default   map[string]string `json:"default"`
		Connected []string          `json:"connected"`
	}
	// ProjectDirectory is one entry of GET /project/{id}/directories.
	ProjectDirectory struct {
		Directory string `json:"directory"`
		Strategy  string `json:"strategy,omitempty"`
	}
	// ExperimentalCapabilities is GET /experimental/capabilities.
	ExperimentalCapabilities struct {
		BackgroundSubagents bool `json:"backgroundSubagents"`
	}
	// ConsoleState is GET /experimental/console: no OpenCode console
	// account manages the pool's providers.
	ConsoleState struct {
		ConsoleManagedProviders []string `json:"consoleManagedProviders"`
		SwitchableOrgCount      int      `json:"switchableOrgCount"`
	}
	// VcsInfo is GET /vcs: the git branch of the served directory, when it
	// is in a git work tree.
	VcsInfo struct {
		Branch        string `json:"branch,omitempty"`
		DefaultBranch string `json:"default_branch,omitempty"`
	}
	// MCPStatus is one value of GET /mcp: an MCP server of the manifest.
	MCPStatus struct {
		Status string `json:"status" enum:"connected,disabled,failed"`
		Error  string `json:"error,omitempty"`
	}
	// SnapshotFileDiff is one file of GET /session/{id}/diff.
	SnapshotFileDiff struct {
		File      string `json:"file"`
		Patch     string `json:"patch"`
		Additions int    `json:"additions"`
		Deletions int    `json:"deletions"`
		Status    string `json:"status" enum:"added,deleted,modified"`
	}
	// LocationInfo is where a v2 API request acts (GET /api/location).
	LocationInfo struct {
		Directory string          `json:"directory"`
		Project   LocationProject `json:"project"`
	}
	// LocationProject is the project of a LocationInfo.
	LocationProject struct {
		ID        string `json:"id"`
		Directory string `json:"directory"`
	}
	// V2List is the envelope of the v2 API's list routes.
	V2List struct {
		Location LocationInfo `json:"location"`
		Data     []any        `json:"data"`
	}
	// Config is GET /config: the part of OpenCode's config that the pool
	// defines.
	Config struct {
		DefaultAgent string                 `json:"default_agent,omitempty"`
		Model        string                 `json:"model,omitempty"`
		Agent        map[string]AgentConfig `json:"agent"`
		// Share is "disabled": there is no share service (the TUI then
		// offers no /share).
		Share string `json:"share,omitempty" enum:"manual,auto,disabled"`
	}
	// AgentConfig is one agent of GET /config.
	AgentConfig struct {
		Description string `json:"description,omitempty"`
		Mode        string `json:"mode,omitempty" enum:"subagent,primary,all"`
		Model       string `json:"model,omitempty"`
		Prompt      string `json:"prompt,omitempty"`
	}
)

// Request bodies.
type (
	// CreateSessionBody is POST /session.
	CreateSessionBody struct {
		ParentID string         `json:"parentID,omitempty" pattern:"^ses"`
		Title    string         `json:"title,omitempty"`
		Agent    string         `json:"agent,omitempty"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}
	// UpdateSessionBody is PATCH /session/{id}.
	UpdateSessionBody struct {
		Title    *string        `json:"title,omitempty"`
		Metadata map[string]any `json:"metadata,omitempty"`
	}
	// Command is one entry of GET /command: a slash command of the
	// pool's project (.claude/commands).
	Command struct {
		Name        string   `json:"name"`
		Description string   `json:"description,omitempty"`
		Source      string   `json:"source,omitempty" enum:"command,mcp,skill"`
		Template    string   `json:"template"`
		Hints       []string `json:"hints"`
	}
	// CommandBody is POST /session/{id}/command. model ("provider/model")
	// is as a prompt's; variant is accepted, not applied.
	CommandBody struct {
		MessageID string `json:"messageID,omitempty" pattern:"^msg"`
		Agent     string `json:"agent,omitempty"`
		Model     string `json:"model,omitempty"`
		Arguments string `json:"arguments"`
		Command   string `json:"command"`
		Variant   string `json:"variant,omitempty"`
		Parts     []any  `json:"parts,omitempty"` // file parts: refused
	}
	// PromptBody is POST /session/{id}/message and prompt_async. model
	// is one of GET /provider's (the turn's); system and tools are
	// accepted; the manifest decides them.
	PromptBody struct {
		MessageID string          `json:"messageID,omitempty" pattern:"^msg"`
		Model     *ModelRef       `json:"model,omitempty"`
		Agent     string          `json:"agent,omitempty"`
		NoReply   bool            `json:"noReply,omitempty"`
		System    string          `json:"system,omitempty"`
		Tools     map[string]bool `json:"tools,omitempty"`
		Parts     []PartInput     `json:"parts"`
	}
	// PartInput is one part of a prompt: text, agent or subtask (file parts
	// are refused).
	PartInput struct {
		ID          string `json:"id,omitempty" pattern:"^prt"`
		Type        string `json:"type" enum:"text,agent,subtask"`
		Text        string `json:"text,omitempty"`
		Synthetic   bool   `json:"synthetic,omitempty"`
		Name        string `json:"name,omitempty"`
		Prompt      string `json:"prompt,omitempty"`
		Description string `json:"description,omitempty"`
		Agent       string `json:"agent,omitempty"`
	}
)

// Permissions (approvals): the OpenAPI's PermissionRequest, the bodies of
// the two reply routes and their errors.
type (
	// PermissionRequest is a tool call waiting for the user: GET
	// /permission and permission.asked. SessionID is the session the tool
	// runs in (a child's own session).
	PermissionRequest struct {
		ID         string          `json:"id" pattern:"^per"`
		SessionID  string          `json:"sessionID" pattern:"^ses"`
		Permission string          `json:"permission"`
		Patterns   []string        `json:"patterns"`
		Metadata   map[string]any  `json:"metadata"`
		Always     []string        `json:"always"`
		Tool       *PermissionTool `json:"tool,omitempty"`
	}
	// PermissionTool names the tool part that asks.
	PermissionTool struct {
		MessageID string `json:"messageID"`
		CallID    string `json:"callID"`
	}
	// PermissionReplied is the properties of permission.replied.
	PermissionReplied struct {
		SessionID string `json:"sessionID" pattern:"^ses"`
		RequestID string `json:"requestID" pattern:"^per"`
		Reply     string `json:"reply" enum:"once,always,reject"`
	}
	// PermissionReplyBody is POST /permission/{requestID}/reply.
	PermissionReplyBody struct {
		Reply   string `json:"reply" enum:"once,always,reject"`
		Message string `json:"message,omitempty"`
	}
	// SummarizeBody is POST /session/{sessionID}/summarize (the TUI's
	// /compact). The model it names is required, as in opencode; the
	// session's agent summarises with its own model.
	SummarizeBody struct {
		ProviderID string `json:"providerID"`
		ModelID    string `json:"modelID"`
		Auto       bool   `json:"auto,omitempty"`
	}
	// ForkBody is POST /session/{sessionID}/fork: the fork holds the
	// messages before messageID (all of them without it).
	ForkBody struct {
		MessageID string `json:"messageID,omitempty" pattern:"^msg"`
	}
	// RevertBody is POST /session/{sessionID}/revert: the session goes
	// back to just before messageID (partID is accepted and kept).
	RevertBody struct {
		MessageID string `json:"messageID" pattern:"^msg"`
		PartID    string `json:"partID,omitempty" pattern:"^prt"`
	}
	// ShellBody is POST /session/{sessionID}/shell (the TUI's !cmd). model
	// is accepted; no model runs.
	ShellBody struct {
		MessageID string    `json:"messageID,omitempty" pattern:"^msg"`
		Agent     string    `json:"agent"`
		Model     *ModelRef `json:"model,omitempty"`
		Command   string    `json:"command"`
	}
	// InitBody is POST /session/{sessionID}/init (the TUI's /init). The
	// model is as a prompt's.
	InitBody struct {
		ModelID    string `json:"modelID"`
		ProviderID string `json:"providerID"`
		MessageID  string `json:"messageID" pattern:"^msg"`
	}
	// SessionCompacted is the properties of session.compacted.
	SessionCompacted struct {
		SessionID string `json:"sessionID" pattern:"^ses"`
	}
	// PermissionRespondBody is the deprecated POST
	// /session/{sessionID}/permissions/{permissionID}.
	PermissionRespondBody struct {
		Response string `json:"response" enum:"once,always,reject"`
	}
	// PermissionNotFoundError answers a reply to no pending request.
	PermissionNotFoundError struct {
		Tag       string `json:"_tag" enum:"PermissionNotFoundError"`
		RequestID string `json:"requestID"`
		Message   string `json:"message"`
	}
	// InvalidRequestError answers a reply body that is not acceptable.
	InvalidRequestError struct {
		Tag     string `json:"_tag" enum:"InvalidRequestError"`
		Message string `json:"message"`
		Kind    string `json:"kind,omitempty"`
		Field   string `json:"field,omitempty"`
	}
)
