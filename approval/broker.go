package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/id"
)

// IDPrefix starts every request id ("per_…", OpenCode's permission ids).
const IDPrefix = "per"

// Reply is a person's answer to a request.
type Reply string

// The four answers a front end offers.
const (
	AllowOnce    Reply = "allow_once"
	AllowAlways  Reply = "allow_always" // and from now on, for this agent and tool
	RejectOnce   Reply = "reject_once"
	RejectAlways Reply = "reject_always" // and from now on, for this agent and tool
)

// Allows reports whether the tool may run.
func (r Reply) Allows() bool { return r == AllowOnce || r == AllowAlways }

// Always reports whether the reply becomes a rule.
func (r Reply) Always() bool { return r == AllowAlways || r == RejectAlways }

func (r Reply) valid() bool {
	switch r {
	case AllowOnce, AllowAlways, RejectOnce, RejectAlways:
		return true
	}
	return false
}

// Who answered, besides a front end (Answer.By).
const (
	ByRule       = "rule"       // an earlier "always" answer
	ByTimeout    = "timeout"    // Options.Timeout passed
	ByUnattended = "unattended" // no front end was attached
	ByCancelled  = "cancelled"  // the run's context ended
)

// Errors of Reply.
var (
	// ErrAnswered: the request was answered already (or withdrawn: timed
	// out, or its run was cancelled); the first answer stands.
	ErrAnswered = errors.New("approval: the request was already answered")
	// ErrUnknown: no such request (never asked, or answered long ago).
	ErrUnknown = errors.New("approval: no such request")
)

// Request is a tool call waiting for a person's answer.
type Request struct {
	// ID is set by Ask; a request stored elsewhere and shown again (a
	// durable run's, docs/approvals.md) keeps its id, and its Created.
	ID string `json:"id"`
	// SessionID is the session the tool runs in: a delegated child's
	// own session, not its root's.
	SessionID string          `json:"session_id"`
	Agent     string          `json:"agent"`
	Tool      string          `json:"tool"`
	CallID    string          `json:"call_id,omitempty"` // the model's tool call id
	Input     json.RawMessage `json:"input,omitempty"`
	// Title is one line for a person ("Write notes/a.md"); Ask derives it
	// from the tool and its input when empty.
	Title string `json:"title"`
	// Rule says why approval is asked (the rule that said "ask").
	Rule    string    `json:"rule,omitempty"`
	Created time.Time `json:"created"` // set by Ask when zero
}

// Answer is how a request was settled.
type Answer struct {
	Reply Reply `json:"reply"`
	// Message is the person's words (optional), or, for an answer the
	// broker gave, why.
	Message string `json:"message,omitempty"`
	// By names the front end that answered, or ByRule, ByTimeout,
	// ByUnattended, ByCancelled.
	By string `json:"by"`
}

// Kind is the kind of a Notice.
type Kind string

// Notice kinds.
const (
	Asked     Kind = "asked"     // a request is pending
	Replied   Kind = "replied"   // a pending request was answered (a person, a rule, the timeout)
	Cancelled Kind = "cancelled" // a pending request was withdrawn: its run was cancelled
)

// Notice tells a subscriber what happened to a request. Its Input is the
// subscriber's own copy.
type Notice struct {
	Kind    Kind    `json:"kind"`
	Request Request `json:"request"`
	Answer  Answer  `json:"answer,omitzero"` // Replied only
}

// Rule is a standing answer, made by an "always" reply: requests of Agent
// for Tool get Reply without asking.
type Rule struct {
	Agent   string    `json:"agent"`
	Tool    string    `json:"tool"`
	Reply   Reply     `json:"reply"` // AllowAlways or RejectAlways
	Created time.Time `json:"created"`
}

// Options configure a Broker. The zero value waits without a time limit
// and rejects when nobody is attached.
type Options struct {
	// Timeout bounds how long a request waits for an answer (none when 0).
	Timeout time.Duration
	// TimeoutReply answers a request at its timeout (RejectOnce when
	// empty).
	TimeoutReply Reply
	// Unattended answers a request when no front end is attached
	// (RejectOnce when empty).
	Unattended Reply
	// Rules, when set, keeps standing answers beyond the broker's life
	// (a project's settings file, package approval/settingsrules): it
	// answers a request before anyone is asked, and every "always" answer
	// is saved to it.
	Rules RuleStore
	// Logger reports subscribers that panic and rules that could not be
	// saved (discarded when nil).
	Logger *slog.Logger
}

// RuleStore keeps standing answers beyond a broker's life. The broker
// calls it outside its lock, from the goroutine of the Ask or the Reply
// at hand, possibly from several at once: an implementation guards its
// own state.
type RuleStore interface {
	// Match answers req when a stored rule covers it (Answer.By ByRule,
	// the message naming the rule); found is false when a person is to be
	// asked.
	Match(req Request) (a Answer, found bool)
	// Save stores the rule an "always" answer made. An error is logged:
	// the answer itself stands, and the rule still holds for the broker's
	// life.
	Save(r Rule) error
}

// closedKeep is how many settled ids the broker remembers, so that a late
// Reply gets ErrAnswered rather than ErrUnknown.
const closedKeep = 4096

type ruleKey struct{ agent, tool string }

type pending struct {
	req  Request
	done chan struct{} // closed once ans is set
	ans  Answer
}

type subscriber struct {
	fn      func(Notice)
	removed bool // guarded by Broker.mu
}

// Broker holds the pending requests. It is safe for concurrent use.
type Broker struct {
	opts Options

	// mu guards every field below. One lock, not one per map, because an
	// answer moves a request from pending to closed and an "always" answer
	// adds a rule and settles the pending requests it matches, in one
	// step; and requests come at the pace of people answering them.
	mu          sync.Mutex
	pending     map[string]*pending
	closed      map[string]string // settled id -> how (for ErrAnswered)
	closedOrder []string
	rules       map[ruleKey]Rule
	subs        []*subscriber
	attached    map[*subscriber]string // front ends that can answer
	queue       []Notice               // notices not yet delivered
	delivering  bool                   // a goroutine is draining queue
	// queued and delivered count the notices; drained is signalled as
	// delivered grows (Sync waits on it).
	queued, delivered uint64
	drained           *sync.Cond
}

// New returns a broker. It rejects replies it does not know.
func New(opts Options) (*Broker, error) {
	if opts.TimeoutReply == "" {
		opts.TimeoutReply = RejectOnce
	}
	if opts.Unattended == "" {
		opts.Unattended = RejectOnce
	}
	for name, r := range map[string]Reply{"TimeoutReply": opts.TimeoutReply, "Unattended": opts.Unattended} {
		if r != AllowOnce && r != RejectOnce {
			return nil, fmt.Errorf("approval: Options.%s must be %s or %s, not %q", name, AllowOnce, RejectOnce, r)
		}
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("approval: Options.Timeout must not be negative, got %v", opts.Timeout)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Broker{
		opts: opts, pending: map[string]*pending{}, closed: map[string]string{},
		rules: map[ruleKey]Rule{}, attached: map[*subscriber]string{},
	}
	b.drained = sync.NewCond(&b.mu)
	return b, nil
}

// Ask asks for approval of req and waits for the answer: a front end's
// Reply, a rule, the timeout, or the unattended default. The error is
// non-nil only for an invalid request or when ctx ended first (the answer
// is then a rejection, By ByCancelled, and the request is withdrawn).
func (b *Broker) Ask(ctx context.Context, req Request) (Answer, error) {
	if req.SessionID == "" || req.Tool == "" {
		return Answer{Reply: RejectOnce, By: ByUnattended, Message: "invalid approval request: it names no session or tool"},
			errors.New("approval: a request needs a session id and a tool")
	}
	if b.opts.Rules != nil {
		if a, found := b.opts.Rules.Match(req); found {
			return a, nil
		}
	}
	b.mu.Lock()
	if r, ok := b.rules[ruleKey{req.Agent, req.Tool}]; ok {
		b.mu.Unlock()
		return ruleAnswer(r), nil
	}
	if len(b.attached) == 0 {
		b.mu.Unlock()
		return Answer{Reply: b.opts.Unattended, By: ByUnattended, Message: unattendedMessage(req, b.opts.Unattended)}, nil
	}
	if req.ID == "" {
		req.ID = id.Ascending(IDPrefix)
		req.Created = time.Now()
	} else if _, dup := b.pending[req.ID]; dup || b.closed[req.ID] != "" {
		// A stored request shown again (docs/approvals.md, Durable) is
		// asked once per broker.
		b.mu.Unlock()
		return Answer{Reply: RejectOnce, By: ByUnattended, Message: "this approval request was asked already"},
			fmt.Errorf("approval: request %s was asked already", req.ID)
	}
	if req.Created.IsZero() {
		req.Created = time.Now()
	}
	req.Input = slices.Clone(req.Input)
	if req.Title == "" {
		req.Title = Title(req.Tool, req.Input)
	}
	p := &pending{req: req, done: make(chan struct{})}
	b.pending[req.ID] = p
	b.enqueueLocked(Notice{Kind: Asked, Request: req})
	b.mu.Unlock()
	b.deliver()

	var timeout <-chan time.Time
	if b.opts.Timeout > 0 {
		t := time.NewTimer(b.opts.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-p.done:
		return p.ans, nil
	case <-timeout:
		b.settle(req.ID, Answer{Reply: b.opts.TimeoutReply, By: ByTimeout,
			Message: fmt.Sprintf("nobody answered within %v", b.opts.Timeout)})
		<-p.done // settled by the timeout or by a reply that came first
		return p.ans, nil
	case <-ctx.Done():
		if b.withdraw(req.ID) {
			return p.ans, context.Cause(ctx)
		}
		<-p.done // a reply came first
		return p.ans, nil
	}
}

// Reply answers the pending request id. The first answer wins: a later one
// gets ErrAnswered, an id the broker does not know ErrUnknown. by names the
// front end ("opencode", "acp", ...).
func (b *Broker) Reply(requestID string, reply Reply, message, by string) error {
	if !reply.valid() {
		return fmt.Errorf("approval: unknown reply %q (want %s, %s, %s or %s)", reply, AllowOnce, AllowAlways, RejectOnce, RejectAlways)
	}
	if by == "" {
		by = "front end"
	}
	if err := b.settle(requestID, Answer{Reply: reply, Message: message, By: by}); err != nil {
		return err
	}
	return nil
}

// settle answers a pending request (the first answer wins); a front
// end's "always" answer becomes a rule, saved to Options.Rules.
func (b *Broker) settle(requestID string, ans Answer) error {
	b.mu.Lock()
	p, ok := b.pending[requestID]
	if !ok {
		how, was := b.closed[requestID]
		b.mu.Unlock()
		if was {
			return fmt.Errorf("%w (%s)", ErrAnswered, how)
		}
		return fmt.Errorf("%w: %q", ErrUnknown, requestID)
	}
	b.resolveLocked(p, ans)
	var made *Rule
	if ans.Reply.Always() && ans.By != ByRule { // a stored rule's answer makes no new rule

		r := Rule{Agent: p.req.Agent, Tool: p.req.Tool, Reply: ans.Reply, Created: time.Now()}
		made = &r
		b.rules[ruleKey{r.Agent, r.Tool}] = r
		// The new rule answers what else waits for the same agent and
		// tool, as if it had been asked after it.
		for _, q := range b.sortedPendingLocked() {
			if q.req.Agent == r.Agent && q.req.Tool == r.Tool {
				b.resolveLocked(q, ruleAnswer(r))
			}
		}
	}
	b.mu.Unlock()
	b.deliver()
	if made != nil && b.opts.Rules != nil {
		b.save(*made)
	}
	return nil
}

// save stores r in the rule store, then lets the store answer what is
// still waiting: a stored rule may cover more than r's agent (a settings
// rule names a tool, for every agent).
func (b *Broker) save(r Rule) {
	if err := b.opts.Rules.Save(r); err != nil {
		b.opts.Logger.Warn("approval: the \"always\" answer holds while this process runs but was not saved", "tool", r.Tool, "agent", r.Agent, "err", err)
		return
	}
	for _, q := range b.Pending() {
		if a, found := b.opts.Rules.Match(q); found {
			_ = b.settle(q.ID, a) // ErrAnswered: someone answered meanwhile
		}
	}
}

// resolveLocked settles p with ans and queues the Replied notice.
func (b *Broker) resolveLocked(p *pending, ans Answer) {
	delete(b.pending, p.req.ID)
	b.rememberLocked(p.req.ID, fmt.Sprintf("%s by %s", ans.Reply, ans.By))
	p.ans = ans
	close(p.done)
	b.enqueueLocked(Notice{Kind: Replied, Request: p.req, Answer: ans})
}

// withdraw removes a pending request whose run ended; false when it was
// answered first.
func (b *Broker) withdraw(requestID string) bool {
	b.mu.Lock()
	p, ok := b.pending[requestID]
	if !ok {
		b.mu.Unlock()
		return false
	}
	delete(b.pending, requestID)
	b.rememberLocked(requestID, "withdrawn: its run was cancelled")
	p.ans = Answer{Reply: RejectOnce, By: ByCancelled, Message: "the run was cancelled"}
	close(p.done)
	b.enqueueLocked(Notice{Kind: Cancelled, Request: p.req})
	b.mu.Unlock()
	b.deliver()
	return true
}

func (b *Broker) rememberLocked(requestID, how string) {
	b.closed[requestID] = how
	b.closedOrder = append(b.closedOrder, requestID)
	if len(b.closedOrder) > closedKeep {
		delete(b.closed, b.closedOrder[0])
		b.closedOrder = slices.Delete(b.closedOrder, 0, 1)
	}
}

func (b *Broker) sortedPendingLocked() []*pending {
	ps := make([]*pending, 0, len(b.pending))
	for _, p := range b.pending {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(x, y *pending) int { return strings.Compare(x.req.ID, y.req.ID) })
	return ps
}

// Pending returns the requests waiting for an answer, oldest first (each
// with its own copy of the input).
func (b *Broker) Pending() []Request {
	b.mu.Lock()
	ps := b.sortedPendingLocked()
	b.mu.Unlock()
	out := make([]Request, len(ps))
	for i, p := range ps {
		out[i] = p.req
		out[i].Input = slices.Clone(p.req.Input)
	}
	return out
}

// Lookup returns the pending request id.
func (b *Broker) Lookup(requestID string) (Request, bool) {
	b.mu.Lock()
	p, ok := b.pending[requestID]
	b.mu.Unlock()
	if !ok {
		return Request{}, false
	}
	r := p.req
	r.Input = slices.Clone(r.Input)
	return r, true
}

// Rules returns the standing answers made by "always" replies, in the
// order they were made.
func (b *Broker) Rules() []Rule {
	b.mu.Lock()
	out := make([]Rule, 0, len(b.rules))
	for _, r := range b.rules {
		out = append(out, r)
	}
	b.mu.Unlock()
	slices.SortFunc(out, func(x, y Rule) int { return x.Created.Compare(y.Created) })
	return out
}

// Subscribe calls fn with every later notice (see the package's
// guarantees) until the returned function is called. A subscriber does not
// count as attached: it watches, it does not answer.
func (b *Broker) Subscribe(fn func(Notice)) (cancel func()) {
	return b.subscribe("", fn)
}

// Attach subscribes fn as a front end that can answer (name says which,
// for logs): while at least one is attached, requests wait for an answer
// instead of getting the unattended default. Requests pending when the
// last front end detaches keep waiting (a client may come back) until
// answered, timed out or cancelled.
func (b *Broker) Attach(name string, fn func(Notice)) (detach func()) {
	if name == "" {
		name = "front end"
	}
	return b.subscribe(name, fn)
}

// Attached reports whether a front end is attached.
func (b *Broker) Attached() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.attached) > 0
}

func (b *Broker) subscribe(name string, fn func(Notice)) func() {
	if fn == nil {
		fn = func(Notice) {}
	}
	s := &subscriber{fn: fn}
	b.mu.Lock()
	b.subs = append(slices.Clip(b.subs), s) // copy on write: deliver holds old slices
	if name != "" {
		b.attached[s] = name
	}
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			s.removed = true
			delete(b.attached, s)
			b.subs = slices.DeleteFunc(slices.Clone(b.subs), func(x *subscriber) bool { return x == s })
			b.mu.Unlock()
		})
	}
}

// enqueueLocked queues a notice for deliver. b.mu is held.
func (b *Broker) enqueueLocked(n Notice) {
	b.queue = append(b.queue, n)
	b.queued++
}

// Sync returns once every notice of what happened before the call (a
// request asked, answered or withdrawn) has been delivered to every
// subscriber: a front end calls it before it tells its client that a run
// ended, so that the client hears of an answer given elsewhere (and the
// withdrawal of its own question) before the run's end. It must not be
// called from a subscriber, which the delivery it waits for is calling.
func (b *Broker) Sync() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for target := b.queued; b.delivered < target; {
		b.drained.Wait()
	}
}

// deliver drains the notice queue unless another goroutine already does:
// one deliverer at a time keeps the order, and no subscriber runs under
// b.mu.
func (b *Broker) deliver() {
	b.mu.Lock()
	if b.delivering {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	for len(b.queue) > 0 {
		n := b.queue[0]
		b.queue[0] = Notice{}
		b.queue = b.queue[1:]
		subs := b.subs
		for _, s := range subs {
			if s.removed {
				continue
			}
			b.mu.Unlock()
			b.call(s, n)
			b.mu.Lock()
		}
		b.delivered++
		b.drained.Broadcast()
	}
	b.queue = nil
	b.delivering = false
	b.mu.Unlock()
}

func (b *Broker) call(s *subscriber, n Notice) {
	defer func() {
		if v := recover(); v != nil {
			b.opts.Logger.Error("approval subscriber panicked; skipped", "notice", n.Kind, "request", n.Request.ID, "panic", v)
		}
	}()
	n.Request.Input = slices.Clone(n.Request.Input)
	s.fn(n)
}

func ruleAnswer(r Rule) Answer {
	verb := "allowed"
	if !r.Reply.Allows() {
		verb = "rejected"
	}
	return Answer{Reply: r.Reply, By: ByRule, Message: fmt.Sprintf("%s by an earlier %q answer for %s of agent %s", verb, r.Reply, r.Tool, r.Agent)}
}

func unattendedMessage(req Request, reply Reply) string {
	if reply.Allows() {
		return fmt.Sprintf("%s allowed without asking: no front end is attached to ask anyone, and unattended requests are allowed", req.Tool)
	}
	why := req.Rule
	if why == "" {
		why = fmt.Sprintf("a rule asks before %s", req.Tool)
	}
	return fmt.Sprintf("%s needs approval (%s) and no front end is attached to ask anyone; "+
		"to run it without asking, set tool_approval: {%s: allow} on agent %s in the manifest",
		req.Tool, why, req.Tool, req.Agent)
}

// Title is a one-line description of a tool call for a person: the tool
// and the part of its input one decides on (the command, the file, the
// URL), cut to 120 characters.
func Title(tool string, input json.RawMessage) string {
	var in map[string]any
	if json.Unmarshal(input, &in) == nil {
		for _, k := range []string{"command", "file_path", "filePath", "path", "url", "pattern"} {
			if s, ok := in[k].(string); ok && strings.TrimSpace(s) != "" {
				return tool + " " + cut(strings.Join(strings.Fields(s), " "), 120)
			}
		}
	}
	return tool
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
