// Compaction: when the next request would fill too much of the model's
// context window, older turns are summarised by a model call into one
// message (docs/control.md, Compaction).

package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// DefaultCompactThreshold is the share of the context window a request
// may fill before older turns are summarised, when none is set.
const DefaultCompactThreshold = 0.8

// ErrContextExhausted ends a run whose next request does not fit the
// model's context window even after compaction (stop reason
// context_exhausted).
var ErrContextExhausted = errors.New("context window exhausted")

// EventCompaction is the event_type of the custom event that records a
// compaction in the session's log (docs/spec/EVENTS.md §2).
const EventCompaction = "compaction"

// Compaction triggers, as Claude Code's PreCompact hooks name them.
const (
	CompactAuto   = "auto"
	CompactManual = "manual"
)

// CompactHooks is implemented by Hooks that are told of a compaction
// before it summarises (hook.Registry: agent/pre-compact, Claude Code's
// PreCompact).
type CompactHooks interface {
	PreCompact(ctx context.Context, c CompactInfo)
}

// CompactInfo is the payload of agent/pre-compact.
type CompactInfo struct {
	Agent     string
	SessionID string
	Trigger   string // CompactAuto or CompactManual
	// Instructions are a manual compaction's own instructions ("" for auto).
	Instructions string
}

// compactState is what a run knows of its requests' size.
type compactState struct {
	from    int            // r.msgs[from:] follow the summary in a request
	summary *model.Message // nil: not compacted in this run
	// inAt is the run's input tokens (all requests) when the last request
	// was built, and reqLen that request's messages: the next estimate is
	// what the provider reported for it plus what was added since.
	inAt   int64
	reqLen int
}

// compactSystem is the system prompt of a compaction request.
const compactSystem = "You summarise a conversation between a user, an AI agent and its tools so that the agent can go on with its task from the summary alone. Keep the user's requests, the decisions made, the facts and results found (file names, values, errors), what is done and what remains. Answer with the summary only."

// Bytes of text per token of the estimate: a conservative figure for
// English text and JSON (providers' tokenisers give about 4).
const bytesPerToken = 4

func tokensOf(bytes int) int { return (bytes + bytesPerToken - 1) / bytesPerToken }

// msgBytes is the size of m in the estimate: its texts, arguments, names
// and ids, and a little for its framing.
func msgBytes(m model.Message) int {
	n := 16
	for _, p := range m.Parts {
		n += 8 + len(p.Text) + len(p.Args) + len(p.ToolName) + len(p.ToolCallID)
	}
	return n
}

func msgsBytes(msgs []model.Message) int {
	n := 0
	for _, m := range msgs {
		n += msgBytes(m)
	}
	return n
}

// window is the agent's context window in tokens (0: unknown, no
// compaction) and the size a request may reach before it compacts.
func (a *Agent) window(r *run) (window, limit int) {
	w := a.cfg.ContextWindow
	if c := r.chosen; c != nil {
		// The agent's own window is its own model's.
		w = c.ContextWindow
	}
	if w <= 0 {
		w = model.ContextWindowOf(r.model)
	}
	return w, int(float64(w) * a.cfg.CompactThreshold)
}

// fixedBytes is the size of what every request of the run sends besides
// its messages: the system prompt and the tools.
func (r *run) fixedBytes() int {
	n := len(r.a.cfg.SystemPrompt)
	for _, s := range r.specs {
		n += len(s.Name) + len(s.Description) + len(s.Parameters)
	}
	return n
}

// estimate is the tokens of a request of view: what the provider
// reported for the last request plus an estimate of the messages added
// since, or, when there is no such report, the estimate of it all.
func (r *run) estimate(view []model.Message) int {
	c := &r.compact
	if in := inputTokens(r.usage); c.reqLen > 0 && c.reqLen <= len(view) && in > c.inAt {
		return int(in-c.inAt) + tokensOf(msgsBytes(view[c.reqLen:]))
	}
	return tokensOf(r.fixedBytes() + msgsBytes(view))
}

// inputTokens is the input tokens of u. OpenAI counts cached tokens in
// them; Anthropic would not, but agentpool asks it for no caching.
func inputTokens(u event.Usage) int64 { return u.InputTokens }

// fit makes the next request fit the context window: it compacts when
// the request would pass the threshold, and ends the run with
// context_exhausted when it cannot fit.
func (r *run) fit(ctx context.Context) (res resultOrNone) {
	window, limit := r.a.window(r)
	if window <= 0 || r.env != nil {
		// Unknown window: nothing to measure against. Under a durable
		// engine compaction is not done (docs/control.md).
		return res
	}
	view := r.snapshot()
	est := r.estimate(view)
	if est > limit {
		done, err := r.compactNow(ctx, CompactAuto, "", limit, limit/2, false)
		if err != nil {
			return r.compactFailed(ctx, err)
		}
		if done {
			view = r.snapshot()
			est = tokensOf(r.fixedBytes() + msgsBytes(view))
		}
	}
	if est > window {
		return resultOrNone{ended: true, res: r.fail(ctx, fmt.Errorf("%w: the next request needs about %d tokens, the context window of %s is %d (after compaction; the latest messages alone do not fit)",
			ErrContextExhausted, est, r.model.ID(), window), event.StopContextExhausted, string(event.StopContextExhausted))}
	}
	r.compact.inAt, r.compact.reqLen = inputTokens(r.usage), len(view)
	return res
}

func (r *run) compactFailed(ctx context.Context, err error) resultOrNone {
	if ctx.Err() != nil {
		return resultOrNone{ended: true, res: r.abort(ctx, context.Cause(ctx))}
	}
	return resultOrNone{ended: true, res: r.fail(ctx, fmt.Errorf("compaction: model %s: %w", r.model.ID(), err), event.StopError, "compaction_error")}
}

// cut is where the kept messages start: the latest messages whose size
// stays within budget tokens, at least the last one that is not a tool
// result (with its results), never a tool result whose call would be
// summarised. With turn, at least the latest turn: from the last prompt
// a user typed on.
func (r *run) cut(budget int, turn bool) int {
	c := &r.compact
	r.mu.Lock()
	defer r.mu.Unlock()
	cut, kept := len(r.msgs), 0
	for i := len(r.msgs) - 1; i >= c.from; i-- {
		kept += tokensOf(msgBytes(r.msgs[i]))
		if r.msgs[i].Role == model.RoleTool {
			continue
		}
		if kept > budget && cut < len(r.msgs) && !turn {
			break
		}
		cut = i
		if turn && r.msgs[i].Role == model.RoleUser && !r.msgs[i].Synthetic {
			turn = false // the latest turn is kept: now the budget decides
		}
	}
	return cut
}

// compactNow summarises the messages before the cut (budget: cut) into
// one summary message; done is false when there is nothing to summarise.
// limit bounds the summarising request.
func (r *run) compactNow(ctx context.Context, trigger, instructions string, limit, budget int, turn bool) (done bool, err error) {
	cut := r.cut(budget, turn)
	c := &r.compact
	if cut <= c.from {
		return false, nil
	}
	tokensBefore := r.estimate(r.snapshot())
	if h, ok := r.hooks.(CompactHooks); ok {
		h.PreCompact(ctx, CompactInfo{Agent: r.a.cfg.Name, SessionID: r.inv.Session.ID, Trigger: trigger, Instructions: instructions})
	}
	r.mu.Lock()
	old := make([]model.Message, 0, cut-c.from+1)
	if c.summary != nil {
		old = append(old, *c.summary)
	}
	old = append(old, r.msgs[c.from:cut]...)
	kept := len(r.msgs) - cut
	r.mu.Unlock()
	summary, err := r.summarise(ctx, old, instructions, limit)
	if err != nil {
		return false, err
	}
	msg := session.SummaryMessage(summary)
	r.mu.Lock()
	c.from, c.summary = cut, &msg
	r.mu.Unlock()
	c.reqLen = 0 // the provider's last count was of another view
	firstKept := r.recordCompaction(summary, kept)
	r.sink.Emit(event.Custom{EventType: EventCompaction, Source: "agent", EventData: map[string]any{
		"agent": r.a.cfg.Name, "trigger": trigger, "summary": summary, "model": r.model.ID(),
		"summarised_messages": len(old), "kept_messages": kept, "first_kept_message_id": firstKept,
		"tokens_before": tokensBefore, "tokens_after": r.estimate(r.snapshot()),
	}})
	return true, nil
}

// summarise asks the agent's model for a summary of msgs. The transcript
// it reads is bounded by limit tokens: a longer one keeps its start and
// its end, and says how much it left out.
func (r *run) summarise(ctx context.Context, msgs []model.Message, instructions string, limit int) (string, error) {
	ask := "Summarise the conversation below."
	if instructions != "" {
		ask += " " + instructions
	}
	text := transcript(msgs, max(1024, (limit-tokensOf(len(compactSystem)+len(ask)))*bytesPerToken))
	req := &model.Request{System: compactSystem, Messages: []model.Message{model.UserText(ask + "\n\n" + text)}, Summarize: msgs}
	var out strings.Builder
	var usage event.Usage
	for ch, err := range r.model.Stream(ctx, req) {
		if err != nil {
			return "", err
		}
		switch ch.Kind {
		case model.ChunkText:
			if out.Len()+len(ch.Text) > r.a.cfg.MaxResponseBytes {
				return "", fmt.Errorf("%w: the summary is larger than %d bytes", ErrResponseTooLarge, r.a.cfg.MaxResponseBytes)
			}
			out.WriteString(ch.Text)
		case model.ChunkUsage:
			usage = ch.Usage
		}
	}
	r.usage.Add(usage)
	r.cost += model.Cost(r.model, usage)
	s := strings.TrimSpace(out.String())
	if s == "" {
		return "", errors.New("the model answered the compaction request without a summary")
	}
	return s, nil
}

// transcript writes msgs as text for the summarising model, at most
// maxBytes of it: past that, the middle is left out and says so.
func transcript(msgs []model.Message, maxBytes int) string {
	var b strings.Builder
	for _, m := range msgs {
		role := string(m.Role)
		if m.Synthetic {
			role += " (added by the runtime)"
		}
		fmt.Fprintf(&b, "[%s]\n", role)
		for _, p := range m.Parts {
			switch p.Kind {
			case model.PartText, model.PartThinking:
				b.WriteString(p.Text)
			case model.PartToolCall:
				fmt.Fprintf(&b, "(call %s %s) %s", p.ToolName, p.ToolCallID, p.Args)
			case model.PartToolResult:
				errMark := ""
				if p.IsError {
					errMark = " error"
				}
				fmt.Fprintf(&b, "(result of %s%s) %s", p.ToolCallID, errMark, p.Text)
			}
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	s := b.String()
	if len(s) <= maxBytes {
		return s
	}
	head := maxBytes / 3
	tail := maxBytes - head
	return fmt.Sprintf("%s\n[... %d bytes of the conversation left out here ...]\n%s", s[:head], len(s)-head-tail, s[len(s)-tail:])
}

// recordCompaction keeps the compacted view in the session's metadata
// (session.MetaCompaction), so that a later run of the session starts
// from it, and returns the id of the first kept message ("" when the
// store does not have the kept messages as the run does: the session is
// then given its whole conversation again, and compacts again).
func (r *run) recordCompaction(summary string, kept int) string {
	st := r.inv.Runtime.Store()
	if st == nil {
		return ""
	}
	stored, err := st.Messages(r.persistCtx, r.inv.Session.ID)
	if err != nil {
		r.inv.Runtime.Logger().Warn("compaction: read the stored messages", "session", r.inv.Session.ID, "err", err)
		return ""
	}
	r.mu.Lock()
	keptMsgs := r.msgs[len(r.msgs)-kept:]
	r.mu.Unlock()
	if len(stored) < kept {
		return ""
	}
	stored = stored[len(stored)-kept:]
	for i := range keptMsgs {
		if stored[i].Role != keptMsgs[i].Role || len(stored[i].Parts) != len(keptMsgs[i].Parts) {
			return ""
		}
	}
	first := stored[0].ID
	err = st.UpdateSession(r.persistCtx, r.inv.Session.ID, func(s *session.Session) {
		if s.Metadata == nil {
			s.Metadata = map[string]any{}
		}
		s.Metadata[session.MetaCompaction] = session.CompactionMeta(summary, first)
	})
	if err != nil {
		r.inv.Runtime.Logger().Warn("compaction: store the compacted view", "session", r.inv.Session.ID, "err", err)
		if r.storeErr == nil {
			r.storeErr = err
		}
	}
	return first
}

// resultOrNone is fit's answer: ended with res, or go on.
type resultOrNone struct {
	ended bool
	res   spawn.Result
}
