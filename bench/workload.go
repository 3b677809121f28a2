package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/id"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/record"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/sessiontree"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// Counter is the consumer of the benchmarks: it touches every event (its
// kind and, for a wrapped event, the producing session and the inner kind),
// as a consumer that routes events would. The pool calls its sink under the
// recorder's lock, so a Counter needs no lock of its own there.
type Counter struct {
	N       int // events received
	Wrapped int // of which subagent wrappers
	touch   int
}

// Emit implements event.Sink.
func (c *Counter) Emit(e event.Event) {
	c.N++
	if s, ok := e.(event.Subagent); ok {
		c.Wrapped++
		c.touch += len(s.ChildSessionID) + len(s.Event.Kind())
		return
	}
	c.touch += len(e.Kind())
}

// Reset zeroes the counts.
func (c *Counter) Reset() { *c = Counter{} }

// OpenSQLite opens the SQLite session store at path (set in sqlite.go). The
// SQLite benchmarks skip while it is nil, so a build without the package
// only has to drop sqlite.go.
var OpenSQLite func(path string) (session.Store, error)

// OpenPostgres opens the PostgreSQL session store of package
// session/postgres at url, its tables in schema (set in postgres.go).
var OpenPostgres func(url, schema string) (session.Store, error)

// OpenSQLiteObserved and OpenPostgresObserved are OpenSQLite and
// OpenPostgres with the store's CommitLatency option set to commit:
// called for each append once it is committed, with its wait.
var (
	OpenSQLiteObserved   func(path string, commit func(time.Duration)) (session.Store, error)
	OpenPostgresObserved func(url, schema string, commit func(time.Duration)) (session.Store, error)
)

// PGWaits is what SamplePostgresWaits saw: Samples samples of the
// database's active backends (Active, summed over the samples), of which
// Lock waited on a heavyweight lock and LWLock on an internal one; and
// the deadlocks the database counted meanwhile.
type PGWaits struct {
	Samples, Active, Lock, LWLock, Deadlocks int64
}

// SamplePostgresWaits samples the lock waits of the backends of the
// database at url whose application_name is app until ctx ends (set in
// postgres.go).
var SamplePostgresWaits func(ctx context.Context, url, app string, interval time.Duration) (PGWaits, error)

// ---------------------------------------------------------------------------
// Delegated call

// DelegatedYAML is the manifest of the delegated call: the parent asks the
// worker once through ask_worker, then answers.
const DelegatedYAML = `default_agent: parent
agents:
  parent:
    description: Delegates one piece of work.
    system_prompt: You delegate the work to the worker and report.
    model:
      type: scripted
      turns:
        - tool_calls:
            - name: ask_worker
              args: {prompt: "Do the work."}
        - text: "finished"
    workers: [worker]
  worker:
    description: Does the work.
    model:
      type: scripted
      turns: ["done"]
`

// Delegated is the delegated-call workload on a reused pool.
type Delegated struct {
	Pool *pool.Pool
	Sink Counter
}

// NewDelegated builds the pool of the delegated call once. store nil means
// a fresh in-memory store.
func NewDelegated(store session.Store) (*Delegated, error) {
	return NewDelegatedWith(pool.Options{Store: store})
}

// NewDelegatedWith is NewDelegated with the pool's options (a store, a
// tracer provider).
func NewDelegatedWith(opts pool.Options) (*Delegated, error) {
	m, err := config.Parse("delegated.yaml", []byte(DelegatedYAML))
	if err != nil {
		return nil, err
	}
	p, err := pool.New(m, opts)
	if err != nil {
		return nil, err
	}
	return &Delegated{Pool: p}, nil
}

// Run runs one delegated call as a root run; every event reaches d.Sink.
func (d *Delegated) Run(ctx context.Context) error {
	res, err := d.Pool.RunSink(ctx, pool.RunRequest{Prompt: "Delegate the work."}, &d.Sink)
	if err != nil {
		return err
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "finished" {
		return fmt.Errorf("delegated call ended with %s: %q (%v)", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Event pipeline

// Emitter is a node that emits N part_delta events (between its
// run_started and stream_complete).
type Emitter struct {
	N    int
	Text string
}

var _ spawn.Node = (*Emitter)(nil)

// Name implements spawn.Node.
func (e *Emitter) Name() string { return "emitter" }

// Description implements spawn.Node.
func (e *Emitter) Description() string { return "emits part_delta events" }

// SourceType implements spawn.Node.
func (e *Emitter) SourceType() event.SourceType { return event.SourceAgent }

// ModelID implements spawn.Node.
func (e *Emitter) ModelID() string { return "" }

// Run implements spawn.Node.
func (e *Emitter) Run(_ context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "emitter", ParentSessionID: inv.Session.ParentID})
	for range e.N {
		inv.Sink.Emit(event.PartDelta{Index: 0, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: e.Text}})
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", FinishReason: "stop"}})
	return spawn.Result{Output: "done", StopReason: event.StopCompleted}
}

// Relay is a node that spawns Next as its only child (to put an emitter
// deeper in the tree).
type Relay struct{ Next spawn.Node }

var _ spawn.Node = (*Relay)(nil)

// Name implements spawn.Node.
func (r *Relay) Name() string { return "relay" }

// Description implements spawn.Node.
func (r *Relay) Description() string { return "spawns the next node" }

// SourceType implements spawn.Node.
func (r *Relay) SourceType() event.SourceType { return event.SourceAgent }

// ModelID implements spawn.Node.
func (r *Relay) ModelID() string { return "" }

// Run implements spawn.Node.
func (r *Relay) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "relay", ParentSessionID: inv.Session.ParentID})
	c, err := spawn.Spawn(ctx, inv, spawn.Request{Node: r.Next, Prompt: "go on", Mechanism: event.MechanismManual})
	if err != nil {
		return spawn.Result{StopReason: event.StopError, Err: err}
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: c.Result.Output, FinishReason: "stop"}})
	return spawn.Result{Output: c.Result.Output, StopReason: event.StopCompleted}
}

// BarePipeline spawns an Emitter (at a given depth below a root) on a bare
// spawn.Runtime: the spawn primitive and its wrapper, no agent loop and no
// recorder. With a processor (see ProcessorMode), the root stream goes
// through a record.Recorder (which appends each event to the memory
// store) before the sink, as in the pool. The root invocation is reused;
// each run's child tree is deleted from the store after the run, as the
// store's retention would, so that runs do not pile up under the one root.
type BarePipeline struct {
	root  *spawn.Invocation
	node  spawn.Node
	store session.Store
}

// ProcessorMode says what a BarePipeline's root stream goes through.
type ProcessorMode int

const (
	// NoProcessor: the wrapper only.
	NoProcessor ProcessorMode = iota
	// Lean: a record.Recorder that nobody watches (the pool's path
	// without protocol clients): store appends only.
	Lean
	// Projected: a record.Recorder watched by a sessiontree.Projection
	// with one subscriber that consumes every Change (the pool's path
	// under an OpenCode server): store appends and the session tree.
	Projected
)

// NewBarePipeline prepares a root session whose runs spawn a chain of
// depth-1 relays ending in an Emitter of n events; sink gets the root
// stream (after the processor, per mode). changes, when not nil, counts
// the Changes a Projected processor delivers.
func NewBarePipeline(n, depth int, sink event.Sink, mode ProcessorMode, changes *atomic.Int64) (*BarePipeline, error) {
	st := memory.New()
	rt := spawn.NewRuntime(spawn.Config{Store: st, Limits: spawn.Limits{MaxSpawns: math.MaxInt, MaxDepth: max(depth, spawn.DefaultMaxDepth)}})
	now := time.Now()
	sess := session.Session{ID: id.Descending(id.Session), AgentName: "root", SourceType: event.SourceAgent, Status: session.StatusRunning, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateSession(context.Background(), sess); err != nil {
		return nil, err
	}
	var node spawn.Node = &Emitter{N: n, Text: "token "}
	for i := 1; i < depth; i++ {
		node = &Relay{Next: node}
	}
	if mode != NoProcessor {
		proc := record.New(st, nil)
		if mode == Projected {
			proj := sessiontree.NewProjection(st, nil)
			proj.Subscribe(func(_ string, cs []sessiontree.Change) {
				if changes != nil {
					changes.Add(int64(len(cs)))
				}
			})
			proc.Watch(proj)
		}
		sink = proc.Open(context.Background(), sess.ID, sink)
	}
	root, err := rt.NewRoot(sess, id.Ascending(id.Run), "", nil, sink)
	if err != nil {
		return nil, err
	}
	return &BarePipeline{root: root, node: node, store: st}, nil
}

// Run spawns the chain once, then deletes the child tree from the store.
func (p *BarePipeline) Run(ctx context.Context) error {
	c, err := spawn.Spawn(ctx, p.root, spawn.Request{Node: p.node, Prompt: "emit", Mechanism: event.MechanismManual})
	if err != nil {
		return err
	}
	if c.Result.StopReason != event.StopCompleted {
		return fmt.Errorf("pipeline child ended with %s (%v)", c.Result.StopReason, c.Result.Err)
	}
	return p.store.DeleteSession(ctx, c.SessionID)
}

// SpawnTool returns a tool (no arguments) that spawns each of nodes as a
// child of the calling session, concurrently when there are several, and
// waits for all of them.
func SpawnTool(name string, nodes []spawn.Node) tool.Tool {
	return tool.New(name, "Spawns the benchmark's children.", func(ctx context.Context, call tool.Call, _ struct{}) (tool.Result, error) {
		inv := spawn.InvocationFrom(ctx)
		if inv == nil {
			return tool.Errorf("%s: no session", name), nil
		}
		spawnOne := func(n spawn.Node) error {
			c, err := spawn.Spawn(ctx, inv, spawn.Request{Node: n, Prompt: "emit", Mechanism: event.MechanismManual, ToolCallID: call.ID})
			if err == nil && c.Result.StopReason != event.StopCompleted {
				err = fmt.Errorf("child ended with %s (%v)", c.Result.StopReason, c.Result.Err)
			}
			return err
		}
		if len(nodes) == 1 {
			if err := spawnOne(nodes[0]); err != nil {
				return tool.Errorf("%s: %v", name, err), nil
			}
			return tool.Result{Content: "ok"}, nil
		}
		errs := make([]error, len(nodes))
		var wg sync.WaitGroup
		for i, n := range nodes {
			wg.Go(func() { errs[i] = spawnOne(n) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return tool.Errorf("%s: %v", name, err), nil
			}
		}
		return tool.Result{Content: "ok"}, nil
	})
}

// spawnerYAML is a root agent that calls the tool "spawn_children" once.
func spawnerYAML(children int) string {
	return fmt.Sprintf(`default_agent: root
limits: {max_children: %d, max_spawns: %d}
agents:
  root:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: spawn_children}]
        - text: "ok"
`, max(children, config.DefaultMaxChildren), max(children+10, config.DefaultMaxSpawns))
}

// NewSpawnerPool builds a pool whose root agent calls a tool that spawns
// nodes (the full path: agent loop, spawn, wrapper, recorder, store).
func NewSpawnerPool(store session.Store, nodes []spawn.Node) (*pool.Pool, error) {
	m, err := config.Parse("spawner.yaml", []byte(spawnerYAML(len(nodes))))
	if err != nil {
		return nil, err
	}
	return pool.New(m, pool.Options{Store: store, ExtraTools: []tool.Tool{SpawnTool("spawn_children", nodes)}})
}

// PoolPipeline is the event pipeline through the pool: the root agent
// spawns an Emitter of N events; the recorder stores every event and passes
// it to Sink.
type PoolPipeline struct {
	Pool *pool.Pool
	Sink event.Sink
}

// NewPoolPipeline builds the pool once.
func NewPoolPipeline(store session.Store, n int, sink event.Sink) (*PoolPipeline, error) {
	p, err := NewSpawnerPool(store, []spawn.Node{&Emitter{N: n, Text: "token "}})
	if err != nil {
		return nil, err
	}
	return &PoolPipeline{Pool: p, Sink: sink}, nil
}

// Run runs one root run.
func (p *PoolPipeline) Run(ctx context.Context) error {
	return runOK(ctx, p.Pool, pool.RunRequest{Prompt: "emit"}, p.Sink)
}

func runOK(ctx context.Context, p *pool.Pool, req pool.RunRequest, sink event.Sink) error {
	res, err := p.RunSink(ctx, req, sink)
	if err != nil {
		return err
	}
	if res.Result.StopReason != event.StopCompleted {
		return fmt.Errorf("run ended with %s (%v)", res.Result.StopReason, res.Result.Err)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Fan-out and depth scaling

// TeamYAML is a root parallel team "crew" of n scripted members (the same
// agent n times: every member still gets its own child session), with
// limits that let all of them run at once.
func TeamYAML(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "default_agent: crew\nlimits: {max_children: %d, max_spawns: %d}\n", max(n, config.DefaultMaxChildren), max(2*n, config.DefaultMaxSpawns))
	b.WriteString("agents:\n  member:\n    model: {type: scripted, turns: [\"done\"]}\n")
	b.WriteString("teams:\n  crew:\n    mode: parallel\n    members:\n")
	for range n {
		b.WriteString("      - member\n")
	}
	return b.String()
}

// ChainYAML is a chain a0 -> a1 -> ... -> a<depth>: each agent asks the
// next one through its worker tool, the last answers "done". A run of a0
// spawns depth nested children.
func ChainYAML(depth int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "default_agent: a0\nlimits: {max_depth: %d}\nagents:\n", max(depth, config.DefaultMaxDepth))
	for i := 0; i < depth; i++ {
		fmt.Fprintf(&b, "  a%d:\n    model:\n      type: scripted\n      turns:\n        - tool_calls: [{name: ask_a%d, args: {prompt: \"go deeper\"}}]\n        - text: \"done\"\n    workers: [a%d]\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "  a%d:\n    model: {type: scripted, turns: [\"done\"]}\n", depth)
	return b.String()
}

// NewPool parses a manifest and builds its pool (store nil: in memory).
func NewPool(name, yaml string, store session.Store) (*pool.Pool, error) {
	m, err := config.Parse(name, []byte(yaml))
	if err != nil {
		return nil, err
	}
	return pool.New(m, pool.Options{Store: store})
}

// RunNode runs a node of p as a root run to completion, every event to sink.
// It returns the root session id.
func RunNode(ctx context.Context, p *pool.Pool, node string, sink event.Sink) (string, error) {
	res, err := p.RunSink(ctx, pool.RunRequest{Node: node, Prompt: "go"}, sink)
	if err != nil {
		return "", err
	}
	if res.Result.StopReason != event.StopCompleted {
		return res.SessionID, fmt.Errorf("%s ended with %s (%v)", node, res.Result.StopReason, res.Result.Err)
	}
	return res.SessionID, nil
}

// ---------------------------------------------------------------------------
// Emission latency

// Latency measures, for each event a child produces, the time from the
// child's Emit call to the root consumer receiving the event (through the
// spawn wrapper and the pool's recorder and store). K children run at once
// (they wait for each other before emitting), each emitting M events.
type Latency struct {
	Pool *pool.Pool
	K, M int

	base  time.Time
	sent  []atomic.Int64 // per sequence number: emit time (ns since base)
	ready atomic.Int64
	gate  chan struct{}

	mu      sync.Mutex
	samples []int64 // latencies in ns, up to maxSamples
	got     int     // latency events received in the current run
}

const maxSamples = 4 << 20

// NewLatency builds the pool once: a root agent whose tool spawns k
// pingers of m events each.
func NewLatency(store session.Store, k, m int) (*Latency, error) {
	l := &Latency{K: k, M: m, base: time.Now(), sent: make([]atomic.Int64, k*m)}
	nodes := make([]spawn.Node, k)
	for i := range nodes {
		nodes[i] = &pinger{l: l, k: i}
	}
	p, err := NewSpawnerPool(store, nodes)
	if err != nil {
		return nil, err
	}
	l.Pool = p
	return l, nil
}

func (l *Latency) now() int64 { return int64(time.Since(l.base)) }

// Emit implements event.Sink: the root consumer.
func (l *Latency) Emit(e event.Event) {
	s, ok := e.(event.Subagent)
	if !ok || s.SourceName != "pinger" {
		return
	}
	d, ok := s.Event.(event.PartDelta)
	if !ok {
		return
	}
	lat := l.now() - l.sent[d.Index].Load()
	l.mu.Lock()
	l.got++
	if len(l.samples) < maxSamples {
		l.samples = append(l.samples, lat)
	}
	l.mu.Unlock()
}

// Run runs one root run (K children, K*M measured events).
func (l *Latency) Run(ctx context.Context) error {
	l.ready.Store(0)
	l.gate = make(chan struct{})
	l.got = 0
	if err := runOK(ctx, l.Pool, pool.RunRequest{Prompt: "ping"}, l); err != nil {
		return err
	}
	if l.got != l.K*l.M {
		return fmt.Errorf("latency: received %d of %d events", l.got, l.K*l.M)
	}
	return nil
}

// Percentiles returns the given percentiles (0-100) of the recorded
// latencies in ns, and the number of samples.
func (l *Latency) Percentiles(ps ...float64) ([]float64, int) {
	l.mu.Lock()
	s := append([]int64(nil), l.samples...)
	l.mu.Unlock()
	out := make([]float64, len(ps))
	if len(s) == 0 {
		return out, 0
	}
	slices.Sort(s)
	for i, p := range ps {
		k := int(math.Ceil(p/100*float64(len(s)))) - 1
		k = min(max(k, 0), len(s)-1)
		out[i] = float64(s[k])
	}
	return out, len(s)
}

// ResetSamples forgets the recorded latencies.
func (l *Latency) ResetSamples() {
	l.mu.Lock()
	l.samples = l.samples[:0]
	l.mu.Unlock()
}

// pinger is child k of a Latency run.
type pinger struct {
	l *Latency
	k int
}

func (p *pinger) Name() string                 { return "pinger" }
func (p *pinger) Description() string          { return "emits stamped events" }
func (p *pinger) SourceType() event.SourceType { return event.SourceAgent }
func (p *pinger) ModelID() string              { return "" }

func (p *pinger) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	l := p.l
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: "pinger", ParentSessionID: inv.Session.ParentID})
	// Wait until every child of the run is up, so that they emit at once.
	gate := l.gate
	if l.ready.Add(1) == int64(l.K) {
		close(gate)
	}
	select {
	case <-gate:
	case <-ctx.Done():
		return spawn.Result{StopReason: event.StopAborted, Err: context.Cause(ctx)}
	}
	for j := range l.M {
		seq := p.k*l.M + j
		l.sent[seq].Store(l.now())
		inv.Sink.Emit(event.PartDelta{Index: seq, Delta: event.Delta{PartDeltaKind: event.PartText, ContentDelta: "ping "}})
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: "done", FinishReason: "stop"}})
	return spawn.Result{Output: "done", StopReason: event.StopCompleted}
}

// ---------------------------------------------------------------------------
// Peak heap

// HeapPeak samples the heap (bytes of live and not yet swept objects, as
// runtime.MemStats.HeapAlloc) in a goroutine and keeps the maximum.
type HeapPeak struct {
	stop chan struct{}
	done chan struct{}
	peak uint64
	rss  uint64 // peak resident set size (RSSNow), sampled alongside
	gs   int    // most goroutines seen, sampled alongside
}

const heapMetric = "/memory/classes/heap/objects:bytes"

// HeapNow returns the current heap (HeapAlloc).
func HeapNow() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// StartHeapPeak starts sampling every interval.
func StartHeapPeak(interval time.Duration) *HeapPeak {
	h := &HeapPeak{stop: make(chan struct{}), done: make(chan struct{}), peak: HeapNow(), rss: RSSNow(), gs: runtime.NumGoroutine()}
	go func() {
		defer close(h.done)
		s := []metrics.Sample{{Name: heapMetric}}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > h.peak {
					h.peak = v
				}
				h.rss = max(h.rss, RSSNow())
				h.gs = max(h.gs, runtime.NumGoroutine())
			}
		}
	}()
	return h
}

// Stop stops sampling and returns the peak in bytes.
func (h *HeapPeak) Stop() uint64 {
	close(h.stop)
	<-h.done
	if v := HeapNow(); v > h.peak {
		h.peak = v
	}
	h.rss = max(h.rss, RSSNow())
	return h.peak
}

// PeakRSS returns the peak resident set size seen, in bytes (after Stop).
func (h *HeapPeak) PeakRSS() uint64 { return h.rss }

// PeakGoroutines returns the most goroutines seen in the process (after
// Stop): a server benchmark's count tells whose they are, the server's
// alone or its in-process client's too.
func (h *HeapPeak) PeakGoroutines() int { return h.gs }

// ---------------------------------------------------------------------------
// Contention

// Contention is N root runs at once on one pool (memory store), each
// spawning an Emitter of M events, with the pool's processor watched by a
// sessiontree.Projection with one subscriber that counts the Changes (as
// under a protocol server): what the roots share is what they contend on.
type Contention struct {
	Pool    *pool.Pool
	Sinks   []Counter // one per root
	Changes atomic.Int64
}

// NewContention builds the pool once for n roots of m events each.
func NewContention(n, m int) (*Contention, error) {
	st := memory.New()
	c := &Contention{Sinks: make([]Counter, n)}
	proc := record.New(st, nil)
	proj := sessiontree.NewProjection(st, nil)
	proj.Subscribe(func(_ string, cs []sessiontree.Change) { c.Changes.Add(int64(len(cs))) })
	proc.Watch(proj)
	mf, err := config.Parse("spawner.yaml", []byte(spawnerYAML(1)))
	if err != nil {
		return nil, err
	}
	c.Pool, err = pool.New(mf, pool.Options{Store: st, Processor: proc,
		ExtraTools: []tool.Tool{SpawnTool("spawn_children", []spawn.Node{&Emitter{N: m, Text: "token "}})}})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Run runs the n roots at once and waits for all of them.
func (c *Contention) Run(ctx context.Context) error {
	errs := make([]error, len(c.Sinks))
	var wg sync.WaitGroup
	for i := range c.Sinks {
		wg.Go(func() { errs[i] = runOK(ctx, c.Pool, pool.RunRequest{Prompt: "emit"}, &c.Sinks[i]) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Reset zeroes the counts.
func (c *Contention) Reset() {
	for i := range c.Sinks {
		c.Sinks[i].Reset()
	}
	c.Changes.Store(0)
}

// Wrapped is the number of wrapped events the roots' sinks got.
func (c *Contention) Wrapped() int64 {
	var n int64
	for i := range c.Sinks {
		n += int64(c.Sinks[i].Wrapped)
	}
	return n
}
