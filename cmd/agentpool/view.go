package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
)

// liveView renders the tree of running sessions as it changes, one line
// per spawn, tool call and end, indented by depth (docs/spec/EVENTS.md §7).
// When the output is not a terminal it stays silent until the summary.
type liveView struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool
	starts map[string]time.Time
}

func newLiveView(w io.Writer, live bool) *liveView {
	return &liveView{w: w, live: live, starts: map[string]time.Time{}}
}

// Emit implements event.Sink.
func (v *liveView) Emit(e event.Event) {
	if !v.live {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	depth := 0
	if s, ok := e.(event.Subagent); ok {
		depth, e = s.Depth, s.Event
	}
	if line := renderLine(e); line != "" {
		fmt.Fprintf(v.w, "%s%s\n", strings.Repeat("  ", depth), line)
	}
}

// renderLine is the text form of one event, or "" when it is not shown.
func renderLine(e event.Event) string {
	switch e := e.(type) {
	case event.SpawnSessionStart:
		icon := "🚀"
		if e.RunMode == event.RunModeAsync {
			icon = "⚡"
		}
		desc := e.Description
		if desc == "" {
			desc = string(e.SpawnMechanism)
		}
		return fmt.Sprintf("%s **`%s`**: %s", icon, e.SourceName, desc)
	case event.SpawnSessionEnd:
		icon := map[event.StopReason]string{event.StopCompleted: "✓", event.StopAborted: "⊘"}[e.StopReason]
		if icon == "" {
			icon = "✗"
		}
		tokens := int64(0)
		if e.Usage != nil {
			tokens = e.Usage.InputTokens + e.Usage.OutputTokens
		}
		line := fmt.Sprintf("%s `%s` %s in %s, %d tokens", icon, e.SourceName, e.StopReason, time.Duration(e.DurationMS)*time.Millisecond, tokens)
		if e.Error != "" {
			line += ": " + e.Error
		}
		return line
	case event.ToolCallStart:
		return fmt.Sprintf("· %s", e.Title)
	case event.RunError:
		return fmt.Sprintf("✗ %s: %s", e.AgentName, e.Message)
	case event.Custom:
		if e.EventType == spawn.EventSpawnRefused {
			return fmt.Sprintf("⊘ **`%v`** refused by %v %v", e.EventData["node"], e.EventData["limit"], e.EventData["max"])
		}
	}
	return ""
}

func (v *liveView) finish(res pool.RunResult) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.live {
		return
	}
	u := res.TotalUsage
	line := fmt.Sprintf("session %s · %s · %d in / %d out tokens", res.SessionID, res.Result.StopReason, u.InputTokens, u.OutputTokens)
	if res.TotalCost > 0 {
		line += fmt.Sprintf(" · $%.4f", res.TotalCost)
	}
	fmt.Fprintln(v.w, line)
}
