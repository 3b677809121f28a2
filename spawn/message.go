package spawn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// Messaging a child and continuing a finished one (docs/control.md).
//
// A running session is messaged through its inbox, as an async child's
// result reaches its parent: the text waits for the session's next model
// request, and the node that delivers it (the agent) emits the message's
// event then, so that the message shows in the session's stream at the
// place the model read it. A finished child is continued in its parent's
// run (Resume): its node runs again in the same session, with its stored
// conversation and the message as the prompt, announced by a second
// spawn_session_start whose metadata says so (MetaResumed). A root run of
// the child's session cannot do it while the parent's run lives: the
// store's claim is on the whole tree (session.Store.Claim).

// EventSessionMessage is the custom event type of a message delivered to
// a running session (MessageEvent): its data has "from" ("parent" or
// "user"), "by" (the parent's agent, or the front end) and "text".
const EventSessionMessage = "session_message"

// MetaResumed is the key, in a spawn_session_start's metadata, that marks
// the start of a finished child continued in its session (Resume); its
// value says who continued it ("parent", or the front end).
const MetaResumed = "resumed"

// MaxMessageBytes bounds a message to a session (Runtime.Message, the
// send_message tool).
const MaxMessageBytes = 256 << 10

// Errors of messaging and continuing children (errors.Is).
var (
	// ErrNotYourChild: the session is not a child of the session that
	// asked (the parent tools act on their own children only).
	ErrNotYourChild = errors.New("not a child of this session")
	// ErrChildCancelled: a child that was cancelled is not continued.
	ErrChildCancelled = errors.New("the child was cancelled")
)

// Sender says who sends a message: a parent agent (Agent, its session
// Session) or a person through a front end (By, as approvals name them).
type Sender struct {
	Agent   string
	Session string
	By      string
}

func (s Sender) from() string {
	if s.Agent != "" {
		return "parent"
	}
	return "user"
}

// words is what the receiving model reads before the text.
func (s Sender) words() string {
	if s.Agent != "" {
		return fmt.Sprintf("Message from your parent agent %s (session %s):", s.Agent, s.Session)
	}
	by := s.By
	if by == "" {
		by = "a front end"
	}
	return "Message from the user (from " + by + "):"
}

// MessageEvent is the event of a message delivered to a session.
func MessageEvent(from Sender, text string) event.Custom {
	by := from.By
	if from.Agent != "" {
		by = from.Agent
	}
	return event.Custom{EventType: EventSessionMessage, Source: "spawn", EventData: map[string]any{
		"from": from.from(), "by": by, "text": text,
	}}
}

// checkMessage refuses an empty or too long message.
func checkMessage(text string) error {
	if strings.TrimSpace(text) == "" {
		return errors.New("the message is empty")
	}
	if len(text) > MaxMessageBytes {
		return fmt.Errorf("the message has %d bytes, more than the %d allowed", len(text), MaxMessageBytes)
	}
	return nil
}

// Message queues text for the next model request of the running session
// sessionID: the session's model reads it as a user message, after words
// that say who sent it, and its stream shows it (MessageEvent) when it is
// delivered. A session that is not running in this runtime is an error,
// as for Cancel: errors.Is session.ErrNotFound, ErrNotRunning (it has
// ended: continue it instead) or ErrRunsElsewhere.
//
// A session whose node has taken its last turn when the message comes
// (its run is ending) has its inbox still open for a moment: what is
// queued then is stored with its conversation, unanswered, as every
// late injection is (a later continuation of the session reads it).
func (rt *Runtime) Message(ctx context.Context, sessionID string, from Sender, text string) error {
	if err := checkMessage(text); err != nil {
		return fmt.Errorf("message %s: %w", sessionID, err)
	}
	if h, ok := rt.lookupSession(sessionID); ok {
		in := Injection{Text: from.words() + "\n\n" + text, Event: MessageEvent(from, text)}
		if h.inbox.tryQueue(in) {
			return nil
		}
		// It ended since the look-up: what the store says follows.
	}
	return rt.notRunning(ctx, "message", sessionID)
}

// notRunning is the error of an act on a session this runtime does not
// run (see Cancel).
func (rt *Runtime) notRunning(ctx context.Context, verb, sessionID string) error {
	s, err := rt.cfg.Store.GetSession(ctx, sessionID)
	switch {
	case errors.Is(err, session.ErrNotFound):
		return fmt.Errorf("%s: %w: %s", verb, session.ErrNotFound, sessionID)
	case err != nil:
		return fmt.Errorf("%s %s: %w", verb, sessionID, err)
	case s.Status == session.StatusRunning:
		return fmt.Errorf("%s %s: %w", verb, sessionID, ErrRunsElsewhere)
	}
	return fmt.Errorf("%s %s: %w (%s)", verb, sessionID, ErrNotRunning, s.Status)
}

// Resume continues the finished child session rec of parent in parent's
// run: rec's node runs again in rec's session, its stored conversation
// as history and prompt as the new user message, as Spawn runs a new
// child (a slot, the run's spawn budget, a spawn_session_start, marked
// MetaResumed with by, and its end); async runs it in the background as
// a new task. The child keeps its id, record and totals (they go on
// counting). A child that is running, was cancelled (ErrChildCancelled)
// or is not parent's (ErrNotYourChild) is an error; so is a run under an
// Env (a durable engine continues nothing here).
func Resume(ctx context.Context, parent *Invocation, rec session.Session, prompt, by string, async bool, toolCallID string) (Child, error) {
	rt := parent.Runtime
	if err := checkMessage(prompt); err != nil {
		return Child{}, err
	}
	switch {
	case rec.ParentID != parent.Session.ID:
		return Child{}, fmt.Errorf("session %s: %w", rec.ID, ErrNotYourChild)
	case rec.Status == session.StatusRunning:
		return Child{}, fmt.Errorf("session %s is running: message it instead", rec.ID)
	case rec.StopReason == event.StopAborted:
		return Child{}, fmt.Errorf("session %s: %w; start a new task instead", rec.ID, ErrChildCancelled)
	case parent.Env != nil:
		return Child{}, fmt.Errorf("session %s: continuing a child is not done under a durable engine", rec.ID)
	}
	node, ok := rt.Lookup(rec.AgentName)
	if !ok {
		return Child{}, fmt.Errorf("session %s: %w %q", rec.ID, ErrUnknownNode, rec.AgentName)
	}
	if err := rt.takeSpawn(ctx, parent, node, nil); err != nil {
		return Child{}, err
	}
	msgs, err := rt.cfg.Store.Messages(ctx, rec.ID)
	if err != nil {
		return Child{}, fmt.Errorf("continue %s: %w", rec.ID, err)
	}
	sem := parent.h.slots(rt.limits.MaxChildren)
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return Child{}, fmt.Errorf("cannot continue %s: %w", rec.ID, context.Cause(ctx))
	}
	now := time.Now()
	err = rt.cfg.Store.UpdateSession(ctx, rec.ID, func(s *session.Session) {
		s.Status, s.StopReason, s.UpdatedAt = session.StatusRunning, "", now
		delete(s.Metadata, "error")
		rec = *s
	})
	if err != nil {
		<-sem
		return Child{}, fmt.Errorf("continue %s: store: %w", rec.ID, err)
	}
	req := Request{Node: node, Prompt: prompt, Description: "continue " + rec.AgentName, Mechanism: event.MechanismTask,
		Async: async, ToolCallID: toolCallID}
	return rt.launch(ctx, parent, req, rec, session.History(msgs), sem, now, by)
}

// Ended returns a channel closed once the running session sessionID has
// ended (for a child: after its spawn_session_end); false when it is not
// running in this runtime.
func (rt *Runtime) Ended(sessionID string) (<-chan struct{}, bool) {
	h, ok := rt.lookupSession(sessionID)
	if !ok {
		return nil, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.endedLocked(), true
}
