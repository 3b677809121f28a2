package opencode

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/durable"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/temporaltest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
)

const engineQueue = "agentpool-opencode-steer"

// temporalEngine is the pool.Engine the command line gives a pool of a
// manifest on Temporal (cli/temporalcli): runs submitted to a
// queue, a child cancelled and messaged through its workflow.
type temporalEngine struct {
	c  client.Client
	st session.Store
}

func (e temporalEngine) RunRoot(ctx context.Context, run pool.EngineRun, sink event.Sink) (spawn.Result, error) {
	_, out, err := durable.RunRoot(ctx, e.c, e.st, durable.RootRequest{Node: run.Node, Prompt: run.Prompt, TaskQueue: engineQueue,
		Stored: run.Session, History: run.History, RunID: run.RunID, SubmitterHooks: true}, sink)
	if err != nil {
		return spawn.Result{}, err
	}
	return out.Result(), nil
}

func (e temporalEngine) Cancel(ctx context.Context, sessionID, by string) (<-chan struct{}, error) {
	return durable.CancelSession(ctx, e.c, sessionID, by)
}

func (e temporalEngine) Message(ctx context.Context, sessionID, by, text string) error {
	return durable.MessageSession(ctx, e.c, sessionID, by, text)
}

// Issue 35's scene from OpenCode on the Temporal engine (a dev server and
// a worker in this process): abort of member b and prompt_async to
// member a reach their workflows (a cancel and a signal), c completes,
// and the lead's tool result names the three outcomes, the front end's
// name included.
func TestSteerTeamMembersOnTemporal(t *testing.T) {
	addr := temporaltest.StartDev(t)
	started := make(chan servertest.Started, 3)
	release := make(chan struct{})
	reg := servertest.SteerRegistry(started, release)
	m, err := config.ParseWith("agentpool.yaml", []byte(servertest.SteerTeamYAML), config.Options{ModelTypes: reg.ModelTypes()})
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	c, err := client.Dial(client.Options{HostPort: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wp, err := pool.New(m, pool.Options{Store: st, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer wp.Close()
	w := worker.New(c, engineQueue, worker.Options{WorkerStopTimeout: 5 * time.Second})
	(&durable.Engine{Activities: durable.Activities{Store: st, Lookup: wp.Node, Runtime: wp.Runtime()},
		Names: wp.NodeNames, Limits: wp.Runtime().Limits(), TaskQueue: engineQueue}).Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p, err := pool.New(m, pool.Options{Store: st, Registry: reg, Engine: temporalEngine{c: c, st: st}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	root := str(createSession(t, base, "")["id"])
	mustCall(t, 204, "POST", base+"/session/"+root+"/prompt_async", promptBody("go"))
	mem := servertest.SteerMembers(t, started)
	servertest.ResolveMembers(t, st, root, mem)
	if v := mustCall(t, 200, "POST", base+"/session/"+mem["b"]+"/abort", ""); v != true {
		t.Fatalf("abort b answered %v", v)
	}
	if rec, err := st.GetSession(context.Background(), mem["b"]); err != nil || rec.Status != session.StatusAborted {
		t.Fatalf("b after its abort: %v %v", rec.Status, err)
	}
	mustCall(t, 204, "POST", base+"/session/"+mem["a"]+"/prompt_async", promptBody("hurry up"))
	// The root runs on a worker too: a message to it is a signal, read at
	// the lead's next model request.
	if err := p.Message(context.Background(), root, "opencode", "and summarise"); err != nil {
		t.Fatalf("message the root: %v", err)
	}
	close(release)
	ev.wait(isType("session.idle", root), 2*time.Minute)
	ctx := context.Background()
	for sid, want := range map[string]session.Status{root: session.StatusCompleted, mem["a"]: session.StatusCompleted,
		mem["b"]: session.StatusAborted, mem["c"]: session.StatusCompleted} {
		if rec, err := st.GetSession(ctx, sid); err != nil || rec.Status != want {
			t.Errorf("%s (%s): %v %v, want %v", sid, rec.AgentName, rec.Status, err, want)
		}
	}
	servertest.CheckSteerOutcomes(t, st, root, "opencode")
	msgs, err := st.Messages(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	// Read by the lead's model: before its final answer (a message that
	// never reached the worker would be stored after the run's end).
	at, final := -1, -1
	for i, m := range msgs {
		switch m.Text() {
		case "Message from the user (from opencode):\n\nand summarise":
			at = i
		case "lead done":
			final = i
		}
	}
	if at < 0 || final < at {
		t.Errorf("the message to the root is at %d, the lead's answer at %d of %d messages", at, final, len(msgs))
	}
}
