package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/cli/treeview"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/termtext"
	"github.com/agentpool/agentpool/pool"
)

// liveView renders the tree of running sessions as appended lines, one
// per spawn, tool call and end, indented by depth (docs/spec/EVENTS.md §7):
// the form of the live view when stderr is not a terminal, or NO_COLOR or
// TERM=dumb is set.
type liveView struct {
	mu sync.Mutex
	w  io.Writer
}

func newLiveView(w io.Writer) *liveView {
	return &liveView{w: w}
}

// Emit implements event.Sink.
func (v *liveView) Emit(e event.Event) {
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
// What the event carries (names, descriptions, tool titles, errors) is
// put on one line with its controls made visible (termtext.Line): one
// event is one line, and a model cannot draw a line of its own.
func renderLine(e event.Event) string {
	line := termtext.Line
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
		return fmt.Sprintf("%s **`%s`**: %s", icon, line(e.SourceName), line(desc))
	case event.SpawnSessionEnd:
		icon := map[event.StopReason]string{event.StopCompleted: "✓", event.StopAborted: "⊘"}[e.StopReason]
		if icon == "" {
			icon = "✗"
		}
		tokens := int64(0)
		if e.Usage != nil {
			tokens = e.Usage.InputTokens + e.Usage.OutputTokens
		}
		s := fmt.Sprintf("%s `%s` %s in %s, %d tokens", icon, line(e.SourceName), line(string(e.StopReason)), time.Duration(e.DurationMS)*time.Millisecond, tokens)
		if e.Error != "" {
			s += ": " + line(e.Error)
		}
		return s
	case event.ToolCallStart:
		return fmt.Sprintf("· %s", line(e.Title))
	case event.RunError:
		return fmt.Sprintf("✗ %s: %s", line(e.AgentName), line(e.Message))
	}
	// Failed and denied tool calls and refused spawns: outcome's ✗ lines.
	return ""
}

// printSummary writes the run's last line on stderr in every mode (tree,
// plain lines, jsonl), so the user always has the session id to continue
// (`run --session ID`) or inspect it (`sessions tree ID`).
func printSummary(w io.Writer, res pool.RunResult) {
	u := res.TotalUsage
	line := fmt.Sprintf("session %s · %s · %d in / %d out tokens", res.SessionID, res.Result.StopReason, u.InputTokens, u.OutputTokens)
	if res.TotalCost > 0 {
		line += fmt.Sprintf(" · $%.4f", res.TotalCost)
	}
	fmt.Fprintln(w, line)
}

// useTree says whether the live status tree is drawn: only on a terminal
// that takes colours and cursor movement. NO_COLOR (https://no-color.org)
// or TERM=dumb fall back to plain appended lines.
func useTree(terminal bool, getenv func(string) string) bool {
	return terminal && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

// treeSummary is how the run ended, for the tree's final frame.
func treeSummary(res pool.RunResult) treeview.Summary {
	s := treeview.Summary{SessionID: res.SessionID, Stop: res.Result.StopReason, Usage: res.TotalUsage, Cost: res.TotalCost}
	if res.Result.Err != nil && res.Result.StopReason != event.StopAborted {
		s.Err = res.Result.Err.Error()
	}
	return s
}
