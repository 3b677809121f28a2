package config

import (
	_ "embed"
	"errors"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentpool/agentpool/internal/bounded"
)

// Defaults applied to zero limits.
const (
	DefaultMaxDepth    = 5
	DefaultMaxChildren = 64
	DefaultMaxSpawns   = 1000
	DefaultMaxTurns    = 25
)

// Model types.
const (
	ModelTest      = "test"
	ModelScripted  = "scripted"
	ModelOpenAI    = "openai"
	ModelAnthropic = "anthropic"
	// ModelFallback is AgentPool's `type: fallback`: ModelSpec.Fallback
	// tried in order, the next one when a model fails before it answered.
	ModelFallback = "fallback"
	// ModelInput is AgentPool's `type: input` (llmling-models' input
	// model): a person answers each turn, asked by the program that runs
	// the pool (package model/human); ModelSpec.Human says how.
	ModelInput = "input"
)

// Tool approval decisions (agent field `tool_approval`).
const (
	ApprovalAllow = "allow" // run the tool
	ApprovalAsk   = "ask"   // ask for approval first (approval/request); no answer denies
	ApprovalDeny  = "deny"  // never run the tool; the model is told why
)

// Team modes.
const (
	ModeParallel   = "parallel"
	ModeSequential = "sequential"
)

// Manifest is a validated agentpool manifest.
type Manifest struct {
	// Path is the absolute path of the file ("" for Parse).
	Path string
	// DefaultAgent is `default_agent`: the agent or team a run starts with.
	// It stays empty when unset; the pool then starts with the first agent
	// in file order (see EntryPoint).
	DefaultAgent string
	Agents       map[string]*Agent
	AgentOrder   []string // agent names in file order
	Teams        map[string]*Team
	TeamOrder    []string // team names in file order
	Storage      Storage
	// Execution is `execution:`: the engine that runs the sessions.
	Execution Execution
	// Approvals is `approvals:`: the wait for a person's answer and the
	// answer when nobody can be asked.
	Approvals Approvals
	Hooks     Hooks
	Limits    Limits
	// Workspace is `workspace:`, the directory file and shell tools act in,
	// as written (relative to the manifest; see ResolvePath). Empty: the
	// current directory.
	Workspace string
	// MCPServers are the manifest-level `mcp_servers:`, offered to every
	// agent.
	MCPServers []MCPServer

	// Name is AgentPool's manifest `name:` (informational).
	Name string
	// DefaultModel is `default_model:`, the model of every agent that
	// names none; the test model when unset (see DefaultModelSpec).
	DefaultModel ModelSpec
	// Skills is `skills:`, where Claude-style skill folders are found.
	Skills Skills
	// Observability is AgentPool's `observability:` block, kept for the
	// tracing integration; nothing reads it yet (Parse warns).
	Observability Observability
	// Warnings are keys that were accepted but change nothing (AgentPool
	// features agentpool does not need or cannot honour harmlessly), one
	// Issue each, sorted by line. They never make a manifest invalid.
	Warnings []Issue
}

// Agent is one entry of `agents:`.
type Agent struct {
	Name         string
	Description  string
	Model        ModelSpec
	SystemPrompt string        // a string, or a list of strings joined with "\n\n"
	Toolsets     []ToolsetSpec // from `tools:` or `toolsets:`
	Workers      []WorkerSpec
	MaxTurns     int // 0 means the runtime default (Limits.MaxTurns)
	// MaxToolCallsPerTurn bounds the tool calls of one model response that
	// run; 0 means agent.DefaultMaxToolCallsPerTurn (64).
	MaxToolCallsPerTurn int
	// ToolApproval is `tool_approval`: a tool name, a pattern in the syntax
	// of path.Match (for example "ask_*") or "*", mapped to ApprovalAllow,
	// ApprovalAsk or ApprovalDeny. Nil when unset. See ApprovalFor.
	ToolApproval map[string]string
	// MCPServers are the agent's own `mcp_servers:`, besides the manifest's.
	MCPServers []MCPServer
	// Budget caps what each session of the agent spends with its subtree
	// (`budget:`; AgentPool's usage_limits.total_tokens_limit when no
	// budget.tokens is set).
	Budget Budget
	// DisplayName is AgentPool's `display_name:` (or `name:`), for front
	// ends; the key of the agent stays its name.
	DisplayName string
	// Output is the structured output the final answer must satisfy
	// (`output_type:`), nil for plain text.
	Output *OutputSpec
	// Connections forward the agent's final output to other nodes.
	Connections []Connection
	// External, when set, makes the agent an external program that speaks
	// ACP (`type: acp` or `type: claude_code`): it has no model; its
	// Toolsets and Workers are served to the program over MCP, its
	// MCPServers passed to it.
	External *ExternalAgent
	Line     int // line of the agent's key
}

// ApprovalFor returns the approval policy of the agent for a tool: see
// ToolApprovalFor.
func (a *Agent) ApprovalFor(tool string) string {
	return ToolApprovalFor(a.ToolApproval, tool)
}

// ToolApprovalFor returns the decision a `tool_approval` policy gives a
// tool: the entry naming the tool exactly; else the longest matching
// pattern (ties: the lexically smallest); else "*"; else the tool's
// DefaultApproval.
func ToolApprovalFor(policy map[string]string, tool string) string {
	if v, ok := policy[tool]; ok {
		return v
	}
	best := ""
	for pat := range policy {
		if pat == "*" || !strings.ContainsAny(pat, `*?[\`) {
			continue
		}
		if ok, _ := path.Match(pat, tool); !ok {
			continue
		}
		if best == "" || len(pat) > len(best) || (len(pat) == len(best) && pat < best) {
			best = pat
		}
	}
	if best != "" {
		return policy[best]
	}
	if v, ok := policy["*"]; ok {
		return v
	}
	return DefaultApproval(tool)
}

// ModelSpec is an agent's `model:`.
type ModelSpec struct {
	Type  string // ModelTest, ModelScripted, ModelOpenAI, ModelAnthropic, ModelFallback or a type of Options.ModelTypes
	Model string // provider model id, e.g. "gpt-4o-mini" ("" for test/scripted)
	// Provider names the OpenAI-compatible service of a `provider:model`
	// id ("openrouter", "groq", ...; see Providers); "" for the type's own
	// API. BaseURL and APIKeyEnv are then the provider's unless written.
	Provider    string
	BaseURL     string
	APIKey      string
	APIKeyEnv   string
	Temperature *float64
	MaxTokens   int
	Timeout     time.Duration
	InputPrice  float64 // USD per million input tokens
	OutputPrice float64 // USD per million output tokens
	// Settings are the other model settings (top_p, seed, penalties,
	// stop sequences, ...), sent where the provider has them.
	Settings ModelSettings

	// MaxResponseBytes bounds one response of the model, any type (its
	// text, thinking and tool call arguments together); 0:
	// agent.DefaultMaxResponseBytes.
	MaxResponseBytes int

	// ContextWindow is the model's context window in tokens (any type;
	// `context_window`), over what the model's catalogue says; 0: the
	// catalogue's (model.ContextWindowOf), and with none there no
	// compaction (docs/control.md, Compaction).
	ContextWindow int
	// CompactThreshold is the share of ContextWindow a request may fill
	// before older turns are summarised (`compact_threshold`, in (0, 1]);
	// 0: agent.DefaultCompactThreshold.
	CompactThreshold float64

	// Test model (AgentPool format, pydantic-ai's TestModel): the first
	// response calls the tools (every tool offered when CallAllTools, the
	// default, else CallTools) with ToolArgs[tool] as arguments, or
	// arguments made from the tool's schema; the next returns
	// CustomOutputText, or a summary of the tool results.
	CustomOutputText string
	CallTools        []string
	CallAllTools     bool
	ToolArgs         map[string]map[string]any
	Seed             int // test model: seed of the generated arguments

	// Fallback lists the models of a `type: fallback` model, in order.
	Fallback []ModelSpec

	// Scripted model: one turn per model call.
	Turns []ScriptTurn
	// Delay is the per-chunk delay of test and scripted models.
	Delay time.Duration
	// PreStreamDelay is the pause of a test model before each response
	// (AgentPool's pre_stream_delay, in seconds).
	PreStreamDelay time.Duration

	// Human is how an input model (ModelInput) asks its person.
	Human HumanSpec
	Line  int // line of the `model` key
}

// HumanSpec is how an input model asks: AgentPool's (llmling-models')
// InputModel keys.
type HumanSpec struct {
	// PromptTemplate shows the turn's prompt; "{prompt}" in it is the
	// last user message (`prompt_template`, default
	// DefaultHumanPromptTemplate).
	PromptTemplate string
	// ShowSystem shows the agent's system prompt first (`show_system`,
	// default true).
	ShowSystem bool
	// InputPrompt is written where the person types (`input_prompt`,
	// default DefaultHumanInputPrompt).
	InputPrompt string
}

// The defaults of an input model's prompts, AgentPool's.
const (
	DefaultHumanPromptTemplate = "👤 Please respond to: {prompt}"
	DefaultHumanInputPrompt    = "Your response: "
)

// ScriptTurn is one response of a scripted model. In YAML a turn is a
// mapping or a plain string (shorthand for {text: ...}).
type ScriptTurn struct {
	Text         string
	Thinking     string
	ToolCalls    []ScriptToolCall
	Error        string        // the model call fails with this message
	Delay        time.Duration // per-chunk delay for this turn (overrides ModelSpec.Delay)
	FinishReason string        // optional: stop, length, ...
}

// ScriptToolCall is a tool call made by a scripted turn.
type ScriptToolCall struct {
	Name string
	Args map[string]any
}

// ToolsetSpec is one entry of `tools:`/`toolsets:`. In YAML an entry is a
// mapping {type: subagent} or the plain string "subagent".
type ToolsetSpec struct {
	Type string
	// Disabled lists the toolset's tools turned off by its `tools:` map
	// (AgentPool's {name: false}); the pool checks that they exist.
	Disabled []string
	// AllowedHosts are the fetch toolset's `allowed_hosts:`: host names,
	// IP addresses and CIDR networks that WebFetch may reach although they
	// are not public (hostallow.Check says what each may be).
	AllowedHosts []string
	// Search is the search toolset's providers (nil for other types).
	Search *SearchSpec
	Line   int
}

// WorkerSpec is one entry of `workers:`; it becomes the tool ask_<Name>.
type WorkerSpec struct {
	Name               string
	PassMessageHistory bool // default false
	ResetHistoryOnRun  bool // default true
	Line               int
}

// Team is one entry of `teams:`.
type Team struct {
	Name         string
	Mode         string   // ModeParallel or ModeSequential
	Members      []string // agents or other teams, in order
	SharedPrompt string
	Description  string
	// RequireAll is `require_all`: every member must succeed. A sequential
	// team stops at the first failed member and fails; a parallel team runs
	// every member and fails when any failed. Default: true for sequential
	// teams, false for parallel ones (which then fail only when every
	// member failed).
	RequireAll  bool
	DisplayName string
	// Connections forward the team's final output to other nodes.
	Connections []Connection
	Line        int // line of the team's key
}

// Storage is `storage:`.
type Storage struct {
	Path string // as written; see Manifest.ResolvePath
	// URL is a PostgreSQL database (storage.url, or an AgentPool sql
	// provider's PostgreSQL URL): postgres://user:password@host:port/db.
	// At most one of Path and URL is set.
	URL string
}

// Hooks is `hooks:`.
type Hooks struct {
	Settings []string // paths as written; see Manifest.ResolvePath
}

// Limits is `limits:`, with defaults applied.
type Limits struct {
	MaxDepth     int
	MaxChildren  int
	MaxSpawns    int
	SpawnTimeout time.Duration // 0 means none
	MaxTurns     int           // default for agents whose MaxTurns is 0
}

// Dir returns the directory of the manifest file, or "." when Path is empty.
func (m *Manifest) Dir() string {
	if m.Path == "" {
		return "."
	}
	return filepath.Dir(m.Path)
}

// ResolvePath resolves a path written in the manifest (storage.path,
// hooks.settings) against Dir. Empty and absolute paths are returned as is.
func (m *Manifest) ResolvePath(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(m.Dir(), p)
}

// EntryPoint returns the node a run starts with: DefaultAgent when set,
// otherwise the first agent in file order.
func (m *Manifest) EntryPoint() string {
	if m.DefaultAgent != "" {
		return m.DefaultAgent
	}
	if len(m.AgentOrder) > 0 {
		return m.AgentOrder[0]
	}
	return ""
}

// Load reads and validates a manifest file. Errors name the file (as passed),
// line and field; validation errors are an *Error. Manifest.Path is set to the
// absolute path of the file. It checks syntax only as to model types (every
// type of ModelTypes is accepted); LoadWith checks them against what the
// program can build.
func Load(path string) (*Manifest, error) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with the program's Options: a model type that
// opts.ModelTypes does not list is an error.
func LoadWith(path string, opts Options) (*Manifest, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	budget := bounded.New(bounded.Config)
	data, err := budget.ReadFile(path)
	if err != nil {
		var be *bounded.Error
		if errors.As(err, &be) {
			return nil, &Error{Issues: []Issue{{File: path, Msg: be.Error()}}}
		}
		return nil, err
	}
	m, err := parseWithin(path, data, budget, opts)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(path); err == nil {
		m.Path = abs
	} else {
		m.Path = path
	}
	return m, nil
}

// Parse validates manifest bytes. name is used in error messages (e.g.
// "agentpool.yaml"). Validation errors are an *Error listing every issue.
// The bytes, and the files the manifest reads, are held to bounded.Config.
// As Load, it accepts every model type of ModelTypes; ParseWith checks them
// against what the program can build.
func Parse(name string, data []byte) (*Manifest, error) {
	return ParseWith(name, data, Options{})
}

// ParseWith is Parse with the program's Options: a model type that
// opts.ModelTypes does not list is an error.
func ParseWith(name string, data []byte, opts Options) (*Manifest, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	budget := bounded.New(bounded.Config)
	if err := budget.Take(int64(len(data))); err != nil {
		return nil, &Error{Issues: []Issue{{File: name, Msg: err.Error()}}}
	}
	return parseWithin(name, data, budget, opts)
}

// parseWithin validates manifest bytes already counted in budget.
func parseWithin(name string, data []byte, budget *bounded.Budget, opts Options) (*Manifest, error) {
	p := &parser{file: name, budget: budget, opts: opts}
	m := p.parse(data)
	if err := p.err(); err != nil {
		return nil, err
	}
	return m, nil
}

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the text of the built-in default manifest.
func DefaultYAML() []byte {
	return append([]byte(nil), defaultYAML...)
}

// Default returns the built-in default manifest: a small offline pool on the
// test model whose default agent "orchestrator" delegates to the parallel team
// "research". Each call returns a fresh copy. It panics if the embedded file
// does not parse (a test guarantees it does).
func Default() *Manifest {
	m, err := Parse("default.yaml", defaultYAML)
	if err != nil {
		panic("config: embedded default.yaml is invalid:\n" + err.Error())
	}
	return m
}
