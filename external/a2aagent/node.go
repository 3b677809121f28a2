package a2aagent

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentpool/agentpool/external/member"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/detach"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// Metadata keys of a child session: the remote task and context.
const (
	MetaTaskID    = "a2a_task_id"
	MetaContextID = "a2a_context_id"
)

// Custom event types of a delegation's stream.
const (
	// EventStatus: a working status message of the remote task {state,
	// text, metadata}.
	EventStatus = "a2a_status"
	// EventArtifact: an artifact of the remote's own delegations {name,
	// text, metadata}.
	EventArtifact = "a2a_artifact"
)

// metaKey is the metadata key under which an agentpool server (package
// server/a2a) describes its delegations.
const metaKey = "agentpool"

// maxCustomText bounds the text of one custom event.
const maxCustomText = 64 << 10

// Node is a remote A2A agent as a node of the pool (spawn.Node).
type Node struct {
	cfg Config
	c   *client
	mu  sync.Mutex
	crd *a2a.AgentCard // fetched by the first delegation
}

var _ spawn.Node = (*Node)(nil)

// New checks cfg and returns its node; nothing is fetched yet.
func New(cfg Config) (*Node, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Node{cfg: cfg, c: &client{http: cfg.HTTPClient, headers: cfg.Headers}}, nil
}

func (n *Node) Name() string { return n.cfg.Name }

// Description is Config.Description, else says where the agent is.
func (n *Node) Description() string {
	if n.cfg.Description == "" {
		return "a remote A2A agent at " + n.cfg.URL
	}
	return n.cfg.Description
}
func (n *Node) SourceType() event.SourceType { return event.SourceAgent }

// ModelID names the remote agent: "a2a:" and its host.
func (n *Node) ModelID() string {
	if u, err := url.Parse(n.cfg.URL); err == nil {
		return "a2a:" + u.Host
	}
	return "a2a"
}

// card is the agent's card, fetched once (again after a failure).
func (n *Node) card(ctx context.Context) (*a2a.AgentCard, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.crd != nil {
		return n.crd, nil
	}
	c, err := n.c.card(ctx, n.cfg.URL)
	if err != nil {
		return nil, err
	}
	n.crd = c
	return c, nil
}

// Run runs one delegation: one message to the remote agent, its task
// followed to its end (see the package documentation).
func (n *Node) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: n.cfg.Name, ParentSessionID: inv.Session.ParentID})
	if inv.Env != nil {
		return n.fail(inv, errors.New("A2A agents do not run on a durable engine yet"), "unsupported")
	}
	card, err := n.card(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return n.abort(inv, context.Cause(ctx))
		}
		return n.fail(inv, fmt.Errorf("agent %s: %w", n.cfg.Name, err), "agent_start")
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: inv.Prompt})
	if c, _ := inv.Session.Metadata[MetaContextID].(string); c != "" {
		msg.ContextID = c
	}
	n.store(ctx, inv, model.UserText(inv.Prompt))
	t := &turn{n: n, inv: inv, ctx: ctx}
	// The stream outlives a cancellation of ctx until it has named its
	// task (CancelGrace at most): a task that is not known cannot be
	// cancelled, and the remote runs it on when its stream closes.
	sctx, scancel := context.WithCancel(detach.Context(ctx))
	defer scancel()
	var (
		mu    sync.Mutex
		known bool
		timer *time.Timer
	)
	defer context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if known {
			scancel()
		} else {
			timer = time.AfterFunc(n.cfg.CancelGrace, scancel)
		}
	})()
	defer func() {
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
	}()
	var streamErr error
	for ev, err := range n.c.send(sctx, card, &a2a.MessageSendParams{Message: msg}) {
		if err != nil {
			streamErr = err
			break
		}
		if t.apply(ev) {
			break
		}
		if t.task != "" {
			mu.Lock()
			known = true
			mu.Unlock()
			if ctx.Err() != nil {
				break
			}
		}
	}
	t.remember()
	if ctx.Err() != nil {
		n.cancelRemote(ctx, card, t.task)
		t.closeText()
		return n.abort(inv, context.Cause(ctx))
	}
	if streamErr != nil {
		t.closeText()
		return n.fail(inv, fmt.Errorf("agent %s: %w", n.cfg.Name, streamErr), "agent_error")
	}
	out := t.answer()
	switch t.state {
	case a2a.TaskStateCompleted:
	case "":
		t.closeText()
		return n.fail(inv, fmt.Errorf("agent %s: the answer ended before its task did", n.cfg.Name), "agent_error")
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		n.cancelRemote(ctx, card, t.task)
		t.closeText()
		return n.fail(inv, fmt.Errorf("agent %s asks for %s, which a delegation cannot give: %s", n.cfg.Name, t.state, t.status), "agent_error")
	default:
		t.closeText()
		why := t.status
		if why == "" {
			why = "no reason given"
		}
		return n.fail(inv, fmt.Errorf("agent %s: its task ended %s: %s", n.cfg.Name, t.state, why), "agent_error")
	}
	if !t.open && out != "" {
		t.text(out)
	}
	t.closeText()
	reply := model.Message{Role: model.RoleAssistant, Parts: []model.Part{{Kind: model.PartText, Text: out}}}
	n.store(ctx, inv, reply)
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: out, Usage: t.usage, Model: n.ModelID(), FinishReason: model.FinishStop}})
	return spawn.Result{Output: out, StopReason: event.StopCompleted, Usage: t.usage, Messages: []model.Message{model.UserText(inv.Prompt), reply}}
}

// cancelRemote sends tasks/cancel for task (when known), bounded by
// CancelGrace. Its failure is logged: the delegation ends all the same.
func (n *Node) cancelRemote(ctx context.Context, card *a2a.AgentCard, task a2a.TaskID) {
	if task == "" {
		return
	}
	cctx, cancel := context.WithTimeout(detach.Context(ctx), n.cfg.CancelGrace)
	defer cancel()
	if err := n.c.cancel(cctx, card, task); err != nil {
		n.cfg.Logger.Warn("a2aagent: tasks/cancel", "agent", n.cfg.Name, "task", task, "err", err)
	}
}

// turn follows one remote task.
type turn struct {
	n             *Node
	inv           *spawn.Invocation
	ctx           context.Context
	task          a2a.TaskID
	context       string
	remembered    bool
	state         a2a.TaskState // the final state, once reached
	usage         event.Usage   // the remote's, when its final status says (an agentpool server's does)
	status        string        // the text of the latest status message
	last          a2a.ArtifactID
	out           strings.Builder // the text of the latest answer artifact
	cut           bool
	open, started bool // the text part is open; some text was streamed
}

// apply takes one event of the task; true once the task reached a final
// state.
func (t *turn) apply(ev a2a.Event) bool {
	switch v := ev.(type) {
	case *a2a.Message:
		t.ids(v.TaskID, v.ContextID)
		t.artifact(a2a.NewArtifactID(), false, v.Parts)
		t.state = a2a.TaskStateCompleted
		return true
	case *a2a.Task:
		t.ids(v.ID, v.ContextID)
		for _, a := range v.Artifacts {
			t.artifactEvent(a, false)
		}
		return t.statusOf(v.Status, false)
	case *a2a.TaskStatusUpdateEvent:
		t.ids(v.TaskID, v.ContextID)
		done := t.statusOf(v.Status, v.Final)
		if done {
			t.usage = usageOf(v.Metadata)
		}
		return done
	case *a2a.TaskArtifactUpdateEvent:
		t.ids(v.TaskID, v.ContextID)
		if v.Artifact != nil {
			t.artifactEvent(v.Artifact, v.Append)
		}
	}
	return false
}

func (t *turn) ids(task a2a.TaskID, ctx string) {
	if task != "" {
		t.task = task
	}
	if ctx != "" {
		t.context = ctx
	}
}

// statusOf takes a status; true when it ends the task.
func (t *turn) statusOf(s a2a.TaskStatus, final bool) bool {
	text := partsText(msgParts(s.Message))
	if text != "" {
		t.status = text
	}
	switch s.State {
	case a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateUnspecified, a2a.TaskStateUnknown:
		if final {
			t.state = a2a.TaskStateCompleted
			return true
		}
		if text != "" {
			data := map[string]any{"state": string(s.State), "text": bound(text)}
			if s.Message != nil && s.Message.Metadata != nil {
				data["metadata"] = s.Message.Metadata
			}
			t.inv.Sink.Emit(event.Custom{EventType: EventStatus, Source: "a2aagent", EventData: data})
		}
		return false
	}
	t.state = s.State
	return true
}

// artifactEvent takes an artifact: an answer's text is streamed, one of
// the remote's delegations becomes a custom event.
func (t *turn) artifactEvent(a *a2a.Artifact, appended bool) {
	if m, ok := a.Metadata[metaKey].(map[string]any); ok && m["child_session_id"] != nil {
		t.inv.Sink.Emit(event.Custom{EventType: EventArtifact, Source: "a2aagent", EventData: map[string]any{
			"name": a.Name, "text": bound(partsText(a.Parts)), "metadata": a.Metadata,
		}})
		return
	}
	t.artifact(a.ID, appended, a.Parts)
}

// artifact streams the text of an answer artifact; a new artifact starts
// a new answer (the answer is the latest one's text).
func (t *turn) artifact(aid a2a.ArtifactID, appended bool, parts a2a.ContentParts) {
	text := partsText(parts)
	if !appended || aid != t.last {
		if t.started && text != "" {
			t.text("\n\n")
		}
		t.last, t.cut = aid, false
		t.out.Reset()
	}
	if text == "" {
		return
	}
	if room := t.n.cfg.MaxOutputBytes - t.out.Len(); len(text) > room {
		if !t.cut {
			t.cut = true
			t.out.WriteString(text[:max(room, 0)])
			t.out.WriteString(fmt.Sprintf("\n[answer cut at %d bytes]", t.n.cfg.MaxOutputBytes))
		}
		return
	}
	t.out.WriteString(text)
	t.text(text)
}

// text streams text on the delegation's one text part.
func (t *turn) text(s string) {
	if !t.open {
		t.open = true
		t.inv.Sink.Emit(event.PartStart{Index: 0, Part: event.Part{PartKind: event.PartText}})
	}
	t.started = true
	t.inv.Sink.Emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: s}})
}

func (t *turn) closeText() {
	if t.open {
		t.open = false
		t.inv.Sink.Emit(event.PartEnd{Index: 0})
	}
}

// answer is the latest answer artifact's text, else the latest status
// message.
func (t *turn) answer() string {
	if t.out.Len() > 0 {
		return t.out.String()
	}
	return t.status
}

// remember stores the remote task's and context's ids on the child
// session, once.
func (t *turn) remember() {
	st := t.inv.Runtime.Store()
	if st == nil || t.remembered || (t.task == "" && t.context == "") {
		return
	}
	t.remembered = true
	err := st.UpdateSession(detach.Context(t.ctx), t.inv.Session.ID, func(s *session.Session) {
		if s.Metadata == nil {
			s.Metadata = map[string]any{}
		}
		s.Metadata[MetaTaskID] = string(t.task)
		s.Metadata[MetaContextID] = t.context
	})
	if err != nil {
		t.n.cfg.Logger.Warn("a2aagent: store the task's ids", "session", t.inv.Session.ID, "err", err)
	}
}

// usageOf reads the tokens an agentpool server's final status reports
// (metadata agentpool.input_tokens, output_tokens: the remote task's whole
// tree); zero from any other server.
func usageOf(meta map[string]any) event.Usage {
	m, _ := meta[metaKey].(map[string]any)
	in, _ := m["input_tokens"].(float64)
	out, _ := m["output_tokens"].(float64)
	if in < 0 || out < 0 {
		return event.Usage{}
	}
	return event.Usage{InputTokens: int64(in), OutputTokens: int64(out)}
}

func msgParts(m *a2a.Message) a2a.ContentParts {
	if m == nil {
		return nil
	}
	return m.Parts
}

// partsText is the text of parts: text parts as they are, data parts as
// JSON; files by name.
func partsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case a2a.TextPart:
			b.WriteString(v.Text)
		case *a2a.TextPart:
			b.WriteString(v.Text)
		case a2a.DataPart:
			fmt.Fprintf(&b, "%v", v.Data)
		case a2a.FilePart:
			b.WriteString("[file]")
		}
	}
	return b.String()
}

func bound(s string) string {
	if len(s) > maxCustomText {
		return s[:maxCustomText] + "..."
	}
	return s
}

// store keeps a message of the child's conversation (its transcript).
func (n *Node) store(ctx context.Context, inv *spawn.Invocation, m model.Message) {
	member.Store(ctx, inv, n.cfg.Name, n.cfg.Logger, m)
}

func (n *Node) fail(inv *spawn.Invocation, err error, code string) spawn.Result {
	return member.Fail(inv, n.cfg.Name, err, code)
}

func (n *Node) abort(inv *spawn.Invocation, cause error) spawn.Result {
	return member.Abort(inv, n.cfg.Name, cause)
}
