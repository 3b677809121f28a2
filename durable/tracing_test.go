package durable

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session/sqlite"
	"github.com/agentpool/agentpool/tool"
)

func TestTracingInterceptorOffWithoutProvider(t *testing.T) {
	i, err := TracingInterceptor(nil)
	if err != nil || i != nil {
		t.Fatalf("TracingInterceptor(nil) = %v, %v; want nothing installed", i, err)
	}
}

// A delegating run through the engine (dev server, a worker in this
// process) is one trace: its root is the submitting side's span, the
// sessions are invoke_agent spans, the boss's and the worker's chat spans
// and the boss's tool call (an activity) are below their sessions' workflow
// spans, the worker's session below the boss's.
func TestDistributedRunIsOneTrace(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits on timeouts
	addr := startDevServer(t)
	api := newFakeAPI(t, 0)
	api.echo = true // a tool call that is an activity, besides the delegation
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	st, err := sqlite.Open(t.TempDir()+"/pool.db", sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	echo := tool.New("echo", "Says ok.", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "ok"}, nil
	})
	p, err := e2ePoolTraced(api.URL+"/v1", "key-0", st, tp, echo)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tracing, err := TracingInterceptor(tp)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: addr, Logger: quietLogger{}, Interceptors: []interceptor.ClientInterceptor{tracing}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, testQueue, worker.Options{WorkerStopTimeout: 5 * time.Second})
	e := engineFor(p)
	e.TaskQueue = testQueue
	e.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx, submit := tp.Tracer("test").Start(ctx, "agentpool run")
	node, _ := p.Node("boss")
	_, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "What is 6*7? Ask your worker.", TaskQueue: testQueue}, event.SinkFunc(func(event.Event) {}))
	submit.End()
	if err != nil || out.StopReason != event.StopCompleted {
		t.Fatalf("run: %+v, %v", out, err)
	}

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	root := submit.SpanContext()
	for _, s := range spans {
		parent := "-"
		if ps, ok := byID[s.Parent().SpanID()]; ok {
			parent = ps.Name()
		}
		t.Logf("span %q under %q", s.Name(), parent)
	}
	var bossSession, workerSession, echoSpan sdktrace.ReadOnlySpan
	chats := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s.SpanContext().TraceID() != root.TraceID() {
			t.Errorf("span %q is in trace %s, not the run's %s", s.Name(), s.SpanContext().TraceID(), root.TraceID())
		}
		if s.SpanContext().SpanID() != root.SpanID() && !s.Parent().IsValid() {
			t.Errorf("span %q is a root: only the submitting side's span is", s.Name())
		}
		switch name := s.Name(); {
		case name == "invoke_agent boss":
			bossSession = s
		case name == "invoke_agent worker":
			workerSession = s
		case strings.HasPrefix(name, "chat "):
			chats[name] = s
		case name == "execute_tool echo":
			echoSpan = s
		case strings.HasPrefix(name, "execute_tool"):
			// ask_worker runs in the workflow, which makes no spans.
			t.Errorf("span %q: a delegation's tool span made by workflow code", name)
		}
	}
	if bossSession == nil || workerSession == nil || chats["chat boss"] == nil || chats["chat worker"] == nil || echoSpan == nil {
		t.Fatalf("want invoke_agent boss and worker, chat boss and worker, execute_tool echo; have %s", names(spans))
	}
	under := func(s, anc sdktrace.ReadOnlySpan) bool {
		for p := s.Parent(); p.IsValid(); {
			if p.SpanID() == anc.SpanContext().SpanID() {
				return true
			}
			ps, ok := byID[p.SpanID()]
			if !ok {
				return false
			}
			p = ps.Parent()
		}
		return false
	}
	// The session a span was made in: the workflow of its nearest
	// workflow span. A session's workflow may have run more than once in
	// a worker's cache (a workflow task that timed out, or waited too long
	// on the worker's sticky queue, is run again from its history): each
	// execution has a span of its own, and what an execution started is
	// below its span. Only the last one is the session's span
	// (nameSessionSpan); the others keep the interceptor's name.
	sessionOf := func(s sdktrace.ReadOnlySpan) string {
		for ok := true; ok; s, ok = byID[s.Parent().SpanID()] {
			if !strings.HasPrefix(s.Name(), "RunWorkflow:") && !strings.HasPrefix(s.Name(), "invoke_agent ") {
				continue
			}
			for _, kv := range s.Attributes() {
				if kv.Key == "temporalWorkflowID" {
					return kv.Value.AsString()
				}
			}
		}
		return ""
	}
	workerID, bossID := agentID(workerSession), agentID(bossSession)
	if n := count(spans, "RunWorkflow:"+WorkflowName); n > 0 {
		t.Logf("%d workflow executions besides the sessions' last ones", n)
	}
	if !under(bossSession, submit.(sdktrace.ReadOnlySpan)) {
		t.Errorf("the root session's span is not below the submitting side's")
	}
	if !under(workerSession, submit.(sdktrace.ReadOnlySpan)) || sessionOf(byID[workerSession.Parent().SpanID()]) != bossID {
		t.Errorf("the child session's span is not below its parent's")
	}
	if sessionOf(chats["chat boss"]) != bossID {
		t.Errorf("the boss's chat span is not below the boss's session only")
	}
	if sessionOf(echoSpan) != bossID {
		t.Errorf("the Tool activity's execute_tool span is not below the boss's session only")
	}
	if sessionOf(chats["chat worker"]) != workerID {
		t.Errorf("the worker's chat span is not below the worker's session")
	}
	if n := count(spans, "invoke_agent worker"); n != 1 {
		t.Errorf("%d invoke_agent worker spans, want 1", n)
	}
	// The child's span says what a child's span says in process: its
	// id, the tree's conversation (the root session) and how it was
	// spawned.
	attrs := map[string]string{}
	for _, kv := range workerSession.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsString()
	}
	if attrs["gen_ai.agent.id"] == "" || bossID == "" || attrs["gen_ai.conversation.id"] != bossID ||
		attrs["agentpool.spawn.mechanism"] != string(event.MechanismWorker) {
		t.Errorf("the child session span's attributes: %v (root session %q)", attrs, bossID)
	}
	// The model and tool calls, run by activities, name the conversation
	// too: the root's and the child's.
	for _, s := range []sdktrace.ReadOnlySpan{chats["chat boss"], chats["chat worker"], echoSpan} {
		conv := ""
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.conversation.id" {
				conv = kv.Value.AsString()
			}
		}
		if conv != bossID {
			t.Errorf("span %q: gen_ai.conversation.id %q, want the root session %q", s.Name(), conv, bossID)
		}
	}
}

// agentID is the session id a session span names (gen_ai.agent.id).
func agentID(s sdktrace.ReadOnlySpan) string {
	for _, kv := range s.Attributes() {
		if kv.Key == "gen_ai.agent.id" {
			return kv.Value.AsString()
		}
	}
	return ""
}

func names(spans []sdktrace.ReadOnlySpan) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return strings.Join(out, ", ")
}

func count(spans []sdktrace.ReadOnlySpan, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name() == name {
			n++
		}
	}
	return n
}
