package pool_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writers (a log).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runawayManifest: an agent whose every turn delegates `fanout` tasks to
// itself, for `turns` turns, under the given limits.
func runawayManifest(turns, fanout int, limits string) string {
	var b strings.Builder
	b.WriteString("default_agent: loop\nagents:\n  loop:\n    tools: [subagent]\n    model:\n      type: scripted\n      turns:\n")
	for i := range turns {
		b.WriteString("        - tool_calls:\n")
		for k := range fanout {
			fmt.Fprintf(&b, "            - {name: task, args: {agent_or_team: loop, prompt: \"recurse %d.%d\"}}\n", i, k)
		}
	}
	b.WriteString("        - \"stopped recursing\"\n")
	fmt.Fprintf(&b, "limits: {%s}\n", limits)
	return b.String()
}

// TestRunawayDelegation: a model that keeps delegating to itself (several
// task calls per turn, every turn) is stopped by max_depth, throttled by
// max_children and cut off by max_spawns. The model gets a clear error for
// each refused spawn, the user sees the same failed tool calls in the
// stream (and one warning in the log), the run completes, and memory stays
// bounded across thousands of attempted spawns.
func TestRunawayDelegation(t *testing.T) {
	const (
		maxDepth    = 3
		maxChildren = 2
		maxSpawns   = 150
		turns       = 12
		fanout      = 4
	)
	m, err := config.Parse("runaway.yaml", []byte(runawayManifest(turns, fanout,
		fmt.Sprintf("max_depth: %d, max_children: %d, max_spawns: %d", maxDepth, maxChildren, maxSpawns))))
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	p, err := pool.New(m, pool.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	// Count as the events go by rather than keep the whole stream.
	var (
		mu          sync.Mutex
		kept        []event.Event // everything but deltas, for the invariant check
		attempts    int           // task calls that completed
		refusedBy   = map[string]int{}
		starts      int
		deepest     int
		open        = map[string]int{} // parent -> open children
		mostOpen    int
		rootSession string
	)
	sink := event.SinkFunc(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		if rootSession == "" {
			if rs, ok := e.(event.RunStarted); ok {
				rootSession = rs.SessionID
			}
		}
		_, inner := event.Unwrap(rootSession, e)
		switch v := inner.(type) {
		case event.PartDelta:
			return
		case event.ToolCallComplete:
			if v.ToolName == "task" {
				attempts++
				for _, limit := range []string{"max_depth", "max_spawns"} {
					if v.IsError && strings.Contains(v.ToolResult, fmt.Sprintf("(%s ", limit)) {
						refusedBy[limit]++
						if !strings.Contains(v.ToolResult, "yourself") {
							t.Errorf("refusal without advice to the model: %s", v.ToolResult)
						}
					}
				}
			}
		case event.SpawnSessionStart:
			starts++
			deepest = max(deepest, v.Depth)
			open[v.ParentSessionID]++
			mostOpen = max(mostOpen, open[v.ParentSessionID])
		case event.SpawnSessionEnd:
			open[v.ParentSessionID]--
		}
		kept = append(kept, e)
	})
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, sink)
	if err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	if err := eventtest.CheckInvariants(res.SessionID, kept); err != nil {
		t.Fatal(err)
	}
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "stopped recursing" {
		t.Errorf("run ended %s (%q): %v", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	t.Logf("%d task calls, %d spawns, deepest %d, at most %d open children of one session; refused: %v",
		attempts, starts, deepest, mostOpen, refusedBy)
	if attempts < 2000 {
		t.Errorf("only %d attempted spawns; the test wants thousands", attempts)
	}
	if starts != maxSpawns {
		t.Errorf("%d children started, want exactly max_spawns = %d", starts, maxSpawns)
	}
	if deepest != maxDepth {
		t.Errorf("deepest child at depth %d, want max_depth = %d", deepest, maxDepth)
	}
	if mostOpen > maxChildren {
		t.Errorf("%d children of one session ran at once, max_children is %d", mostOpen, maxChildren)
	}
	if refusedBy["max_depth"] == 0 || refusedBy["max_spawns"] == 0 {
		t.Errorf("refusals by limit: %v; want both max_depth and max_spawns", refusedBy)
	}
	if n := strings.Count(logs.String(), "spawn budget of the run exhausted"); n != 1 {
		t.Errorf("the budget warning was logged %d times, want once:\n%s", n, logs.String())
	}

	// The model saw the refusals: they are tool results of its conversation.
	msgs, err := p.Store().Messages(context.Background(), res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	sawBudget := false
	for _, m := range msgs {
		for _, part := range m.Parts {
			if part.Kind == model.PartToolResult && part.IsError && strings.Contains(part.Text, fmt.Sprintf("spawn budget of the run exhausted (max_spawns %d)", maxSpawns)) {
				sawBudget = true
			}
		}
	}
	if !sawBudget {
		t.Error("the root model never got the max_spawns refusal as a tool result")
	}

	// Memory: what the run left behind (its sessions, logs and
	// conversations in the in-memory store) stays within a generous bound.
	kept = nil
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use: %d KiB before, %d KiB after (%+d KiB)", before.HeapInuse>>10, after.HeapInuse>>10, grew>>10)
	const bound = 256 << 20
	if grew > bound {
		t.Errorf("heap in use grew by %d MiB across the run, bound %d MiB", grew>>20, bound>>20)
	}
}
