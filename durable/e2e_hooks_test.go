package durable

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/spawn"
)

// hookManifest writes a manifest of a boss with the subagent tools and its
// worker, on the fake server, with Claude Code command hooks (PreToolUse
// of the task tool, SubagentStart, SessionStart) that append their input to ran.jsonl
// in the manifest's directory.
func hookManifest(t *testing.T, addr, baseURL, key string) string {
	t.Helper()
	dir := t.TempDir()
	model := func(name string) string {
		return fmt.Sprintf("{type: openai, model: %s, base_url: %q, api_key: %q}", name, baseURL, key)
	}
	yaml := fmt.Sprintf(`execution: {engine: temporal, address: %q, task_queue: %s}
default_agent: boss
agents:
  boss:
    model: %s
    tools: [subagent]
  worker:
    model: %s
hooks:
  settings: hooks.json
`, addr, testQueue, model("boss"), model("worker"))
	record := `{"type": "command", "command": "cat >> \"${CLAUDE_PROJECT_DIR}/ran.jsonl\""}`
	hooks := `{"hooks": {
  "PreToolUse": [{"matcher": "Task", "hooks": [` + record + `]}],
  "SubagentStart": [{"hooks": [` + record + `]}],
  "SessionStart": [{"hooks": [` + record + `]}]
}}`
	for name, body := range map[string]string{"pool.yaml": yaml, "hooks.json": hooks} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "pool.yaml")
}

// hookRuns counts the runs of each hook event recorded in ran.jsonl.
func hookRuns(t *testing.T, manifest string) map[string]int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(manifest), "ran.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, ev := range []string{"PreToolUse", "SubagentStart", "SessionStart"} {
		out[ev] = strings.Count(string(raw), `"hook_event_name":"`+ev+`"`)
	}
	return out
}

// A background task and command hooks on an `agentpool worker`: the boss
// starts the task, answers that it waits, gets the task's result and
// answers with it; the PreToolUse hook of the task call and the child's
// SubagentStart hook run once each (on the worker); and the root's live
// stream has the shape of the same run in this process, hook runs
// included.
func TestAsyncTaskAndCommandHooksOnWorker(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits
	addr := startDevServer(t)
	api := newFakeAPI(t, 300*time.Millisecond)
	api.async = true
	db := testDB(t)
	st := openTestDB(t, db)
	manifest := hookManifest(t, addr, api.URL+"/v1", "key-worker")
	cmd := exec.Command(cliBinary(t), "worker", "-c", manifest, "--db", db)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	startProc(t, cmd)

	m, err := config.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st, Registry: batteries.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialTest(t, addr)
	sink, got := eventtest.Collect()
	node, _ := p.Node("boss")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "What is 6*7?", TaskQueue: testQueue}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != event.StopCompleted || out.Output != "The worker says: 42." {
		t.Fatalf("end = %+v", out)
	}
	evs := got()
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Errorf("invariants: %v", err)
	}
	if runs := hookRuns(t, manifest); runs["PreToolUse"] != 1 || runs["SubagentStart"] != 1 || runs["SessionStart"] != 1 {
		t.Errorf("hooks ran under the engine: %v, want one PreToolUse, SubagentStart and SessionStart", runs)
	}
	// The runs are in the root's stream too, as in process.
	recorded := map[string]int{}
	for _, e := range evs {
		if c, ok := e.(event.Custom); ok && c.EventType == command.EventHookRun {
			recorded[fmt.Sprint(c.EventData["hook_event"])]++
		}
	}
	if recorded["PreToolUse"] != 1 || recorded["SubagentStart"] != 1 {
		t.Errorf("hook_run events in the stream: %v", recorded)
	}

	// The same manifest in this process, hooks and all.
	reg := hook.New(hook.Options{})
	defer reg.Close(context.Background())
	if err := command.Install(reg, m, command.Options{TranscriptDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	ref, err := pool.New(m, pool.Options{Store: memory.New(), Hooks: reg, Registry: batteries.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	refSink, refGot := eventtest.Collect()
	res, err := ref.RunSink(ctx, pool.RunRequest{Node: "boss", Prompt: "What is 6*7?"}, refSink)
	if err != nil || res.Result.Output != out.Output {
		t.Fatalf("in process: %+v, %v", res.Result, err)
	}
	if runs := hookRuns(t, manifest); runs["PreToolUse"] != 2 || runs["SubagentStart"] != 2 || runs["SessionStart"] != 2 {
		t.Errorf("hooks ran (both runs): %v", runs)
	}
	a, b := shape(root, evs), shape(res.SessionID, refGot())
	if strings.Join(sorted(a), ",") != strings.Join(sorted(b), ",") {
		t.Errorf("streams differ:\ntemporal:   %v\nin process: %v", a, b)
	}

	// Submitted by a pool (pool.Options.Engine, as the CLI does): the
	// pool runs the root's session hooks, the workflow does not run them
	// again.
	sub, err := pool.New(m, pool.Options{Store: st, Hooks: reg, Registry: batteries.Registry(), Engine: submitter{c: c, st: st}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	res, err = sub.RunSink(ctx, pool.RunRequest{Node: "boss", Prompt: "What is 6*7?"}, event.Discard)
	if err != nil || res.Result.Output != out.Output {
		t.Fatalf("submitted by a pool: %+v, %v", res.Result, err)
	}
	if runs := hookRuns(t, manifest); runs["PreToolUse"] != 3 || runs["SubagentStart"] != 3 || runs["SessionStart"] != 3 {
		t.Errorf("hooks ran (three runs): %v, want 3 each (a SessionStart by the pool only)", runs)
	}
}

// submitter is a pool.Engine on RunRoot whose pool runs the session hooks.
type submitter struct {
	c  client.Client
	st session.Store
}

func (e submitter) RunRoot(ctx context.Context, run pool.EngineRun, sink event.Sink) (spawn.Result, error) {
	_, out, err := RunRoot(ctx, e.c, e.st, RootRequest{Node: run.Node, Prompt: run.Prompt, TaskQueue: testQueue,
		Stored: run.Session, History: run.History, RunID: run.RunID, SubmitterHooks: true}, sink)
	if err != nil {
		return spawn.Result{}, err
	}
	return out.Result(), nil
}
