package durable

import (
	"encoding/json"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// EngineName is the engine's name in a session's Metadata (session.MetaEngine).
const EngineName = "temporal"

// Names of the workflow and the activities on a task queue.
const (
	WorkflowName   = "agentpool.Session"
	activityPrefix = "agentpool."
	actWrite       = activityPrefix + "Write"
	actCreate      = activityPrefix + "Create"
	actTurn        = activityPrefix + "Turn"
	actTool        = activityPrefix + "Tool"
	actEnd         = activityPrefix + "End"
	actHook        = activityPrefix + "Hook"
	actToolsets    = activityPrefix + "Toolsets"
	actSpawns      = activityPrefix + "Spawns"
	actEnds        = activityPrefix + "Ends"
)

// SessionInput starts a session's workflow.
type SessionInput struct {
	// Session is the session's record as created (it is in the store).
	Session    session.Session `json:"session"`
	RunID      string          `json:"run_id"`
	Prompt     string          `json:"prompt"`
	History    []model.Message `json:"history,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	// AfterSeq is how many events the session's log has before this run
	// (a resumed root's); 0 for a new session.
	AfterSeq int64 `json:"after_seq,omitempty"`
	// Timeout, when more than 0, is the spawn's timeout: the session's run
	// is cancelled with spawn.ErrTimeout as its cause once it has run that
	// long (workflow time), as a child in this process is.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Budget is where the spawn budget (max_spawns) of the run the
	// session is part of is kept; empty for the run's first session, whose
	// own record keeps it, for its run id.
	Budget BudgetRef `json:"budget,omitzero"`
	// Inject is what the subagent/start hooks injected into the child:
	// its first model request gets it.
	Inject []string `json:"inject,omitempty"`
	// SubmitterHooks reports that the root's submitter runs its
	// session/start and /end hooks itself (a pool: pool.Pool.RunSink,
	// which also keeps an editor's hook session open across prompts), so
	// the workflow must not run them again.
	SubmitterHooks bool `json:"submitter_hooks,omitempty"`
	// Conversation is the id of the tree's root session (empty for the
	// root itself) and Mechanism how the session was spawned: what the
	// session's span says of it (gen_ai.conversation.id,
	// agentpool.spawn.mechanism), as a session run in process has.
	Conversation string          `json:"conversation,omitempty"`
	Mechanism    event.Mechanism `json:"mechanism,omitempty"`
	// Approvals, when set, makes the workflow wait for the answers to
	// the approvals its tool calls ask (approvals.go); its children get
	// it too. Nil: an ask is settled by the hooks on the worker, where no
	// front end is attached (refused).
	Approvals *Approvals `json:"approvals,omitempty"`
	// Carry is what a parallel team's run that continued as new goes on
	// with (carry.go); nil in a session's first workflow run.
	Carry *Carry `json:"carry,omitempty"`
	// EndLocal, set by every build since it was added, says that the
	// session's end is written by a local activity (storeEnd) without
	// asking workflow.GetVersion: the input, in the history, decides
	// it for a replay, and each session's workflow spares the version's
	// marker and the search attribute the SDK upserts with it (two
	// history events, and a visibility write on the server, per team
	// member). Unset in the histories of the builds before it, which
	// ask.
	EndLocal bool `json:"end_local,omitempty"`
	// WaitLocal, set by every build since it was added, says that a
	// cancel of the workflow does not cancel the local activity that
	// creates children (createBatch) or writes the session's end
	// (storeEnd) while it runs: the SDK lets a cancelled local activity
	// go at once while its Go code goes on, so its writes could land
	// after the session's end (a child created that never ran, a
	// spawn_session_start after run_error). The cancel waits for them
	// instead, as WaitForCancellation does for the other steps (they are
	// short store writes), and a child created meanwhile is started, then
	// cancelled (runChild). A cancel reaches such a local activity only
	// past its workflow task's heartbeat (still running 80% into the
	// task's timeout: under load, or a large team's batch). Carried by
	// the input, as EndLocal, rather than a version marker per session.
	// Unset in the histories of the builds before it, which replay as
	// made.
	WaitLocal bool `json:"wait_local,omitempty"`
	// TurnLocal says that the session's model turns are local activities
	// (wfEnv.Turn) and that its parent writes its end: set for the
	// members of a parallel team, whose workflow is then one workflow
	// task, 6 history events against 12 (BENCHMARKS.md, "Large teams on
	// Temporal").
	//
	// A turn so run is not timed out by heartbeats: the SDK keeps its
	// workflow task alive while it runs, and a task lost with its worker
	// is done again elsewhere, where the turn finds what it stored
	// (Activities.Turn). A message that comes while the task runs waits
	// on the server until the task ends, and the server refuses the end
	// of a workflow whose task saw one come: the task done again reads
	// it. So the session's end is not written by the task that decides
	// it, which could be refused; the workflow returns it
	// (SessionOutput.End) and the parent writes it once the workflow has
	// completed, before its spawn_session_end (runChild, Pending.Ends). A cancelled session writes its own end, as
	// before: it reads no more messages, and a turn of it that the cancel
	// let go writes nothing after that end (turnFence, in the process
	// that ran both). Carried by the input, as EndLocal; unset in the
	// histories of the builds before it.
	TurnLocal bool `json:"turn_local,omitempty"`
	// SignalYield, set by every build since it was added, says that after
	// a final answer the workflow yields once to its other coroutines
	// (Turn) instead of waiting on a 1 ms timer: a message signalled in
	// the workflow task of the turn's end is handed to the coroutine
	// that receives messages, and must reach the inbox before the session
	// decides to end. The timer did it at the cost of a workflow task and
	// three history events per session (a team member's workflow: ~25 %
	// of its cost on the dev server, BENCHMARKS.md). A message signalled
	// while the task that ends the session runs is read too: the server
	// refuses to complete a workflow whose task saw a signal come, and
	// the task done again has it with the turn's end
	// (TestMessageDuringTheEndingTaskIsRead). Unset in the histories of
	// the builds before it, which replay with their timer.
	SignalYield bool `json:"signal_yield,omitempty"`
	// ChildNames, set by every build since it was added, says that the
	// session's children are named by their place among its run's spawns
	// (childNames), not at the time of the workflow task that spawns
	// them: a task done again after its worker died names the child its
	// Create had stored alike. Unset in the histories of the builds
	// before it, which replay as made.
	ChildNames bool `json:"child_names,omitempty"`
}

// SessionOutput is how a session's workflow ended.
type SessionOutput struct {
	Output     string           `json:"output"`
	StopReason event.StopReason `json:"stop_reason"`
	Error      string           `json:"error,omitempty"`
	Usage      event.Usage      `json:"usage"` // the session's own
	Cost       float64          `json:"cost"`
	TotalUsage event.Usage      `json:"total_usage"` // own plus its descendants'
	TotalCost  float64          `json:"total_cost"`
	DurationMS int64            `json:"duration_ms"`
	Messages   []model.Message  `json:"messages,omitempty"`
	// End, when set, is the session's end, not yet written: its parent
	// writes it, with its own next write, once the workflow has
	// completed (SessionInput.TurnLocal, Pending.Ends).
	End *Pending `json:"end,omitempty"`
}

// Pending is what a session's workflow emitted and stored since its last
// write, for the next activity to write first.
type Pending struct {
	SessionID string `json:"session_id"`
	// AfterSeq is how many events the session's log has before Events.
	AfterSeq int64             `json:"after_seq"`
	Events   []json.RawMessage `json:"events,omitempty"`
	Messages []session.Message `json:"messages,omitempty"`
	// Check makes the write look at the store first even on a first
	// attempt: an earlier activity that carried some of it failed, and
	// may have written it.
	Check bool `json:"check,omitempty"`
	// Ends are the ends of children that returned them
	// (SessionOutput.End), written before Events: each child's end
	// comes before its parent's spawn_session_end, which follows it in
	// the journal. They ride with the parent's events rather than in an
	// activity of their own, so that a workflow task done again after
	// its worker died emits them, and the events after them, in the order
	// of its history, as the lost task did.
	Ends []EndInput `json:"ends,omitempty"`
}

func (p *Pending) empty() bool { return len(p.Events) == 0 && len(p.Messages) == 0 && len(p.Ends) == 0 }

// CreateInput creates a child session, then writes Pending (which ends
// with the child's spawn_session_start).
type CreateInput struct {
	Pending Pending         `json:"pending"`
	Session session.Session `json:"session"`
	// More are further sessions created with Session, in order: a batch
	// of a parallel team's members (creations.create), whose starts are all
	// in Pending.
	More []session.Session `json:"more,omitempty"`
	// Since is where the log is read from for the starts of sessions that
	// exist already: a member of a team that a lost workflow task created
	// has its start where that task wrote it, before Pending.AfterSeq
	// (mover.names).
	Since int64 `json:"since,omitempty"`
}

// TurnInput runs one model turn.
type TurnInput struct {
	Pending   Pending       `json:"pending"`
	Agent     string        `json:"agent"`
	Request   model.Request `json:"request"`
	MessageID string        `json:"message_id"`
	CreatedAt time.Time     `json:"created_at"`
	// Conversation is the tree's root session: the chat span's
	// gen_ai.conversation.id (empty in histories written before it).
	Conversation string `json:"conversation,omitempty"`
	// RunID is the session's run, whose end fences a turn run as a local
	// activity (turnFence); empty in histories written before it.
	RunID string `json:"run_id,omitempty"`
}

// TurnOutput is what a turn produced: Events is how many events it wrote.
type TurnOutput struct {
	Turn   spawn.Turn `json:"turn"`
	Events int64      `json:"events"`
}

// ToolInput runs one tool call.
type ToolInput struct {
	Pending Pending   `json:"pending"`
	Agent   string    `json:"agent"`
	Call    tool.Call `json:"call"`
	// Conversation is the tree's root session, as TurnInput's.
	Conversation string `json:"conversation,omitempty"`
}

// EndInput writes what is pending and the session's final record.
type EndInput struct {
	Pending Pending       `json:"pending"`
	Output  SessionOutput `json:"output"`
	// RunID is the run that ends: a second end of one run replaces the
	// first's figures rather than adding to them (Activities.End).
	RunID string `json:"run_id,omitempty"`
	// CloseStrays: the run did not complete; children of the session
	// still stored running were created by a workflow task that a dead
	// worker began and the task done again never started (Activities.End
	// ends them).
	CloseStrays bool `json:"close_strays,omitempty"`
}

// HookInput calls one hook point (see hooks.go) for a session.
type HookInput struct {
	Node       string          `json:"node,omitempty"` // the agent, for its points
	Point      string          `json:"point"`
	In         json.RawMessage `json:"in"`
	Session    session.Session `json:"session"`
	RunID      string          `json:"run_id,omitempty"`
	Prompt     string          `json:"prompt,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	// Child is the child session of subagent/start.
	Child *session.Session `json:"child,omitempty"`
	// DeferApprovals: an ask of tools/pre-execute that no approval/request
	// listener settles comes back to the workflow (SessionInput.Approvals).
	DeferApprovals bool `json:"defer_approvals,omitempty"`
}

// HookOutput is a hook point's answer, the events its hooks emitted for
// the session and what they injected into it (ChildInjected: into the
// session registered while the point fired: subagent/start's child,
// session/start's root).
type HookOutput struct {
	Out           json.RawMessage   `json:"out,omitempty"`
	Events        []json.RawMessage `json:"events,omitempty"`
	Injected      []string          `json:"injected,omitempty"`
	ChildInjected []string          `json:"child_injected,omitempty"`
}
