package cli

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/spawn"
)

// exitIncomplete is the exit code of a run that completed while part of its
// work did not: a child session failed or a limit refused a spawn.
const exitIncomplete = 3

// outcome passes a run's stream on and notes the work that did not happen,
// so that a run which completed anyway does not look like a full success:
// child sessions (anywhere in the tree) that ended without completing,
// spawns refused by a limit (spawn_refused events), and tool calls denied
// approval (deny).
type outcome struct {
	next event.Sink
	// report prints a ✗ line of progress (a failed or denied tool call, a
	// refused spawn) outside the lock; nil: none (jsonl, whose stream
	// carries them).
	report func(string)

	// mu guards what follows. One lock for the maps and lists: they are
	// one run's summary, written at the rare events that end, refuse or
	// deny something (never per streamed delta) and read once at its end.
	mu        sync.Mutex
	failed    []string       // names of the failed child sessions, in order
	cancelled []string       // names of the child sessions that ended aborted, in order
	refused   map[string]int // "max_spawns 2" -> spawns it refused
	denied    []string       // "Write by writer": tool calls denied approval, in order
	names     progressNames
	// shown: the calls whose denial the approval observer printed and
	// counted (deny), not to be shown and counted again at their end.
	shown map[string]bool
}

func newOutcome(next event.Sink, report func(string)) *outcome {
	return &outcome{next: next, report: report, refused: map[string]int{}, shown: map[string]bool{},
		names: progressNames{agents: map[string]string{}, titles: map[string]string{}, refused: map[string]bool{}}}
}

// Emit implements event.Sink.
func (o *outcome) Emit(e event.Event) {
	inner, ids := e, []string(nil)
	if w, ok := e.(event.Subagent); ok {
		inner, ids = w.Event, w.Path // never a wrapper itself (docs/spec/EVENTS.md §3.5)
	}
	o.mu.Lock()
	// A denial by a policy or a hook gets a line but is not counted in
	// denied: it is what the manifest asked for (a guard that blocks
	// rm -rf did its job).
	line := o.names.note(inner, ids)
	if c, ok := inner.(event.ToolCallComplete); ok && o.shown[c.ToolCallID] {
		delete(o.shown, c.ToolCallID)
		line = ""
	}
	o.mu.Unlock()
	switch v := inner.(type) {
	case event.SpawnSessionEnd:
		switch v.StopReason {
		case event.StopCompleted, event.StopMaxTokens:
		case event.StopAborted:
			o.mu.Lock()
			o.cancelled = append(o.cancelled, v.SourceName)
			o.mu.Unlock()
		default:
			o.mu.Lock()
			o.failed = append(o.failed, v.SourceName)
			o.mu.Unlock()
		}
	case event.Custom:
		if v.EventType == spawn.EventSpawnRefused {
			o.mu.Lock()
			o.refused[fmt.Sprintf("%v %v", v.EventData["limit"], v.EventData["max"])]++
			o.mu.Unlock()
		}
	}
	o.next.Emit(e)
	if line != "" && o.report != nil {
		o.report(line)
	}
}

// deny notes a tool call (callID) that was denied approval, whose denial
// the approval observer printed.
func (o *outcome) deny(callID, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.denied = append(o.denied, name)
	o.shown[callID] = true
}

// summary says what did not happen ("run completed, but 1 child session
// failed (bad)"), or "" when nothing failed and nothing was refused.
func (o *outcome) summary() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var parts []string
	if n := len(o.failed); n > 0 {
		parts = append(parts, fmt.Sprintf("%s failed (%s)", plural(n, "child session"), countNames(o.failed)))
	}
	if n := len(o.cancelled); n > 0 {
		verb := "were"
		if n == 1 {
			verb = "was"
		}
		parts = append(parts, fmt.Sprintf("%s %s cancelled (%s)", plural(n, "child session"), verb, countNames(o.cancelled)))
	}
	if len(o.refused) > 0 {
		n := 0
		limits := make([]string, 0, len(o.refused))
		for l, k := range o.refused {
			n += k
			limits = append(limits, l)
		}
		slices.Sort(limits)
		verb := "were"
		if n == 1 {
			verb = "was"
		}
		parts = append(parts, fmt.Sprintf("%s %s refused (%s)", plural(n, "spawn"), verb, strings.Join(limits, ", ")))
	}
	if n := len(o.denied); n > 0 {
		verb := "were"
		if n == 1 {
			verb = "was"
		}
		parts = append(parts, fmt.Sprintf("%s %s denied approval (%s)", plural(n, "tool call"), verb, countNames(o.denied)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "run completed, but " + strings.Join(parts, " and ")
}

// plural is "1 spawn" or "3 spawns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// countNames lists names in first-seen order, with a count for repeated
// ones ("bad, worse ×2"), at most ten of them.
func countNames(names []string) string {
	counts := map[string]int{}
	var order []string
	for _, n := range names {
		if counts[n] == 0 {
			order = append(order, n)
		}
		counts[n]++
	}
	var out []string
	for i, n := range order {
		if i == 10 {
			out = append(out, fmt.Sprintf("and %d more", len(order)-i))
			break
		}
		if c := counts[n]; c > 1 {
			n = fmt.Sprintf("%s ×%d", n, c)
		}
		out = append(out, n)
	}
	return strings.Join(out, ", ")
}
