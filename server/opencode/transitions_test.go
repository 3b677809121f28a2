package opencode

import (
	"strings"
	"testing"
	"time"
)

// TestToolPartsTransitionOnce runs the nested example and checks every
// tool part's updates on the bus as OpenCode's own server sends them:
// pending at most once, then running (again only when its title or
// metadata change), then completed or error exactly once, never a step
// back. It also checks that user text parts carry no time, as OpenCode's
// do: `opencode run` prints a text part with time.end as output, so a
// timed user part echoed the prompt. Before, a delegating part went
// pending four times and completed twice, and the TUI kept a stale
// "Delegating…" line while `opencode run` printed each delegation twice.
func TestToolPartsTransitionOnce(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	rid := str(createSession(t, base, "")["id"])
	mustCall(t, 200, "POST", base+"/session/"+rid+"/message", promptBody("Write a note"))
	ev.wait(isType("session.idle", rid), 10*time.Second)

	rank := map[string]int{"pending": 0, "running": 1, "completed": 2, "error": 2}
	seen := map[string][]string{} // call id -> statuses published
	userParts := 0
	for _, e := range ev.events() {
		if e["type"] != "message.part.updated" {
			continue
		}
		part := obj(get(e, "properties", "part"))
		switch part["type"] {
		case "tool":
			id := str(part["callID"])
			st := str(get(part, "state", "status"))
			seen[id] = append(seen[id], st)
			// Every delegation can be opened in the TUI: a part that
			// ran a child session ends as a task part linking it.
			if child := get(part, "state", "metadata", "sessionId"); child != nil && st == "completed" &&
				(part["tool"] != "task" || get(part, "state", "input", "subagent_type") == nil) {
				t.Errorf("delegating part %s is no task part: %v", id, part)
			}
		case "text":
			if part["time"] == nil {
				userParts++ // assistant text parts always carry time.start
			}
		}
	}
	if len(seen) < 4 {
		t.Fatalf("only %d tool parts: %v", len(seen), seen)
	}
	for id, sts := range seen {
		count := map[string]int{}
		for i, st := range sts {
			count[st]++
			if i > 0 && rank[st] < rank[sts[i-1]] {
				t.Errorf("%s: %s after %s (%s)", id, st, sts[i-1], strings.Join(sts, " "))
			}
		}
		if count["pending"] > 1 || count["completed"]+count["error"] != 1 {
			t.Errorf("%s: published %s, want pending at most once and one end", id, strings.Join(sts, " "))
		}
	}
	if userParts == 0 {
		t.Error("no user text part without time: user parts must carry none")
	}

	// The stored history agrees: no user part has a time.
	for _, m := range arr(mustCall(t, 200, "GET", base+"/session/"+rid+"/message", "")) {
		if get(m, "info", "role") != "user" {
			continue
		}
		for _, part := range arr(get(m, "parts")) {
			if get(part, "time") != nil {
				t.Errorf("stored user part with a time: %v", part)
			}
		}
	}
}
