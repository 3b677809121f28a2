package pool_test

import (
	"context"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
)

func compatPool(t *testing.T, yaml string, opts pool.Options) *pool.Pool {
	t.Helper()
	m, err := config.Parse("compat.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// run runs node and returns the spawned node names (in start order) and
// the events.
func runSpawns(t *testing.T, p *pool.Pool, node string) (pool.RunResult, []string, []event.Event) {
	t.Helper()
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: node, Prompt: "go"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	evs := events()
	if err := eventtest.CheckInvariants(res.SessionID, evs); err != nil {
		t.Fatal(err)
	}
	var spawned []string
	for _, e := range evs {
		if _, inner := event.Unwrap(res.SessionID, e); inner != nil {
			if s, ok := inner.(event.SpawnSessionStart); ok {
				spawned = append(spawned, s.SourceName)
			}
		}
	}
	return res, spawned, evs
}

// Connections forward a completed output to their targets, which run as
// children before the source's stream ends; conditions filter and stop
// them, counting across runs; a cycle ends at the depth limit.
func TestConnections(t *testing.T) {
	p := compatPool(t, `
agents:
  writer:
    model: {type: test, custom_output_text: "urgent: the draft"}
    connections:
      - {type: node, name: reader, filter_condition: {type: word_match, words: [URGENT]}}
      - {type: node, name: auditor, wait_for_completion: false, stop_condition: {type: message_count, max_messages: 2}}
      - {type: node, name: reader, filter_condition: {type: word_match, words: [never, draft], mode: all}}
  reader: {model: {type: test, custom_output_text: read}}
  auditor: {model: {type: test, custom_output_text: audited}}
  ping:
    model: {type: test, custom_output_text: ping}
    connections: [{type: node, name: pong}]
  pong:
    model: {type: test, custom_output_text: pong}
    connections: [{type: node, name: ping}]
teams:
  crew:
    mode: sequential
    members: [reader]
    connections: [{type: node, name: auditor, delay: 0.01}]
limits: {max_depth: 3}
`, pool.Options{})
	res, spawned, evs := runSpawns(t, p, "writer")
	if res.Result.Output != "urgent: the draft" || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("writer = %+v", res.Result)
	}
	slices.Sort(spawned)
	if !slices.Equal(spawned, []string{"auditor", "reader"}) {
		t.Errorf("first run spawned %v", spawned)
	}
	if last := evs[len(evs)-1]; last.Kind() != event.KindStreamComplete {
		t.Errorf("last event = %s, want the writer's stream_complete", last.Kind())
	}
	// The second output meets the stop condition (2 messages): the auditor
	// connection is gone from then on.
	for i, want := range [][]string{{"reader"}, {"reader"}} {
		if _, spawned, _ := runSpawns(t, p, "writer"); !slices.Equal(spawned, want) {
			t.Errorf("run %d spawned %v, want %v", i+2, spawned, want)
		}
	}
	// A cycle stops at max_depth with a connection_error event.
	_, spawned, evs = runSpawns(t, p, "ping")
	if !slices.Equal(spawned, []string{"pong", "ping", "pong"}) {
		t.Errorf("cycle spawned %v", spawned)
	}
	errs := 0
	for _, e := range evs {
		if _, inner := event.Unwrap("", e); inner != nil {
			if c, ok := inner.(event.Custom); ok && c.EventType == pool.EventConnectionError && strings.Contains(c.EventData["error"].(string), "depth") {
				errs++
			}
		}
	}
	if errs != 1 {
		t.Errorf("%d connection_error events at the depth limit", errs)
	}
	if _, spawned, _ := runSpawns(t, p, "crew"); !slices.Equal(spawned, []string{"reader", "auditor"}) {
		t.Errorf("team connection spawned %v", spawned)
	}
}

// A toolset's tools map turns tools off; a name it does not have is an
// error when the pool is built.
func TestDisabledTools(t *testing.T) {
	m, err := config.Parse("compat.yaml", []byte("agents:\n  a:\n    model: test\n    toolsets: [{type: plan, tools: {TodoRead: false}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.New(m, pool.Options{}); err == nil || !strings.Contains(err.Error(), `no builtin tool "TodoRead" to turn off (its toolsets have: TodoWrite)`) {
		t.Errorf("err = %v", err)
	}
}

// skills.instruction.inject: all puts the instructions of every skill in
// the system prompt of the agents that have the skills tools.
func TestSkillsInjectAll(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "s", "tone"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s", "tone", "SKILL.md"), []byte("---\nname: tone\ndescription: Sets the tone.\n---\nBe warm.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(manifest, []byte("skills: {paths: [s], include_default: false, instruction: {inject: all}}\nagents:\n  a: {model: {type: test, call_tools: []}, system_prompt: Hi.}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := config.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pool.FromManifest(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Agents[0]; !slices.Contains(a.Builtin, config.ToolsetSkills) {
		t.Errorf("skills: gives every agent the skills toolset: %v", a.Builtin)
	}
	seen := &systemPrompts{Model: cfg.Agents[0].Model}
	cfg.Agents[0].Model = seen
	p, err := pool.Build(cfg, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	runSpawns(t, p, "a")
	if len(seen.system) != 1 || !strings.HasPrefix(seen.system[0], "Hi.\n\n<skill_content name=\"tone\">\nBe warm.") {
		t.Errorf("system prompts = %q", seen.system)
	}
}

// systemPrompts records the system prompt of every request.
type systemPrompts struct {
	model.Model
	mu     sync.Mutex
	system []string
}

func (s *systemPrompts) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	s.mu.Lock()
	s.system = append(s.system, req.System)
	s.mu.Unlock()
	return s.Model.Stream(ctx, req)
}
