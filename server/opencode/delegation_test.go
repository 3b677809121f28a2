package opencode

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/session"
)

var subagentTitle = regexp.MustCompile(`^.+ \(@[A-Za-z0-9_-]+ subagent\)$`)

// TestNestedDelegation runs the nested example (a task that runs a
// parallel team whose members use workers and a sequential team) and checks
// that the event stream shows the delegation as OpenCode does: each child
// is created (with parentID) before any of its content, the spawning tool
// part goes running with metadata.sessionId, the child ends with
// session.idle, then the tool part completes with the child's output.
func TestNestedDelegation(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")

	root := createSession(t, base, "")
	rid := str(root["id"])
	const prompt = "Write a note about nested teams"
	ans := mustCall(t, 200, "POST", base+"/session/"+rid+"/message", promptBody(prompt))
	mustMatchResponse(t, "post", "/session/{sessionID}/message", "200", ans)
	if get(ans, "info", "role") != "assistant" || get(ans, "info", "sessionID") != rid {
		t.Fatalf("answer %v", ans)
	}
	final := textOf(arr(get(ans, "parts")))
	if !strings.HasPrefix(final, "Done:") {
		t.Fatalf("answer text %q", final)
	}
	ev.wait(isType("session.idle", rid), 10*time.Second)
	evs := ev.events()
	checkEvents(t, evs)

	// The children, from the stream.
	created := map[string]int{}     // child -> index of its session.created
	parentOf := map[string]string{} // child -> parent
	for i, e := range evs {
		if e["type"] != "session.created" {
			continue
		}
		info := obj(get(e, "properties", "info"))
		c := str(info["id"])
		if _, dup := created[c]; dup {
			t.Fatalf("session.created twice for %s", c)
		}
		created[c] = i
		if pid := str(info["parentID"]); pid != "" {
			parentOf[c] = pid
			if !subagentTitle.MatchString(str(info["title"])) {
				t.Fatalf("child title %q", info["title"])
			}
		}
	}
	ctx := context.Background()
	tree, err := session.Subtree(ctx, p.Store(), rid)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree) != 8 || len(parentOf) != 7 {
		t.Fatalf("%d stored sessions, %d children in the stream (want 8, 7)", len(tree), len(parentOf))
	}
	for _, rec := range tree[1:] {
		if parentOf[rec.ID] != rec.ParentID {
			t.Fatalf("child %s: parentID %q in the stream, %q in the store", rec.ID, parentOf[rec.ID], rec.ParentID)
		}
	}

	for c, parent := range parentOf {
		idle, running, completed := -1, -1, -1
		var output string
		for i, e := range evs {
			sid := str(get(e, "properties", "sessionID"))
			if sid == c && e["type"] != "session.created" && i < created[c] {
				t.Fatalf("child %s: %v before its session.created", c, e["type"])
			}
			if sid == c && idle >= 0 {
				t.Fatalf("child %s: %v after its session.idle", c, e["type"])
			}
			if sid == c && e["type"] == "session.idle" {
				idle = i
			}
			if sid == parent && e["type"] == "message.part.updated" {
				part := obj(get(e, "properties", "part"))
				if part["type"] != "tool" || get(part, "state", "metadata", "sessionId") != c {
					continue
				}
				if get(part, "state", "metadata", "parentSessionId") != parent {
					t.Fatalf("child %s: tool part metadata %v", c, get(part, "state", "metadata"))
				}
				switch get(part, "state", "status") {
				case "running":
					if running < 0 {
						running = i
					}
				case "completed":
					completed = i
					output = str(get(part, "state", "output"))
				default:
					t.Fatalf("child %s: tool part %v", c, get(part, "state"))
				}
			}
		}
		if running < 0 || idle < 0 || completed < 0 || !(running < idle && idle < completed) {
			t.Fatalf("child %s: running %d, idle %d, completed %d (want running < idle < completed)", c, running, idle, completed)
		}
		// The completed part carries the child's final output.
		msgs := arr(mustCall(t, 200, "GET", base+"/session/"+c+"/message", ""))
		mustMatchResponse(t, "get", "/session/{sessionID}/message", "200", msgs)
		if len(msgs) < 2 || get(msgs[0], "info", "role") != "user" {
			t.Fatalf("child %s messages %v", c, msgs)
		}
		if want := lastText(msgs); want != "" && output != want && !strings.Contains(output, want) {
			t.Fatalf("child %s: tool output %q, child's last text %q", c, output, want)
		}
		if output == "" {
			t.Fatalf("child %s: empty output", c)
		}
		// children lists it.
		found := false
		for _, k := range arr(mustCall(t, 200, "GET", base+"/session/"+parent+"/children", "")) {
			if get(k, "id") == c {
				found = get(k, "parentID") == parent
			}
		}
		if !found {
			t.Fatalf("child %s not in the children of %s", c, parent)
		}
	}

	// The root's messages: the prompt, then the steps, the task part
	// completed and linked to the squad.
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+rid+"/message", ""))
	mustMatchResponse(t, "get", "/session/{sessionID}/message", "200", msgs)
	if get(msgs[0], "info", "role") != "user" || textOf(arr(get(msgs[0], "parts"))) != prompt {
		t.Fatalf("root's first message %v", msgs[0])
	}
	task := findTool(msgs, "task")
	if task == nil || get(task, "state", "status") != "completed" || parentOf[str(get(task, "state", "metadata", "sessionId"))] != rid {
		t.Fatalf("root's task part %v", task)
	}
	if get(task, "state", "input", "subagent_type") != "squad" {
		t.Fatalf("task input %v", get(task, "state", "input"))
	}
	if last := msgs[len(msgs)-1]; get(last, "info", "id") != get(ans, "info", "id") || lastText(msgs) != final {
		t.Fatalf("last message %v, answer %v", last, ans)
	}
	for _, m := range msgs[1:] {
		if get(m, "info", "parentID") != get(msgs[0], "info", "id") {
			t.Fatalf("assistant message not answering the prompt: %v", get(m, "info"))
		}
		parts := arr(get(m, "parts"))
		if get(parts[0], "type") != "step-start" || get(parts[len(parts)-1], "type") != "step-finish" {
			t.Fatalf("step parts %v", parts)
		}
	}
	if st := obj(mustCall(t, 200, "GET", base+"/session/status", "")); len(st) != 0 {
		t.Fatalf("status after the run %v", st)
	}
	// Cost and tokens of the root are the subtree's.
	if in := get(mustCall(t, 200, "GET", base+"/session/"+rid, ""), "tokens", "input"); in == 0.0 {
		t.Fatalf("root tokens %v", in)
	}

	// A second server on the same store (as after a restart) rebuilds the
	// messages from the stored conversations.
	_, base2 := newServer(t, p, Options{})
	msgs2 := arr(mustCall(t, 200, "GET", base2+"/session/"+rid+"/message", ""))
	mustMatchResponse(t, "get", "/session/{sessionID}/message", "200", msgs2)
	if textOf(arr(get(msgs2[0], "parts"))) != prompt || lastText(msgs2) != final {
		t.Fatalf("rebuilt root messages %v", msgs2)
	}
	task2 := findTool(msgs2, "task")
	if task2 == nil || get(task2, "state", "metadata", "sessionId") != get(task, "state", "metadata", "sessionId") ||
		get(task2, "state", "output") != get(task, "state", "output") {
		t.Fatalf("rebuilt task part %v, live %v", task2, task)
	}
	for c := range parentOf {
		m2 := arr(mustCall(t, 200, "GET", base2+"/session/"+c+"/message", ""))
		mustMatchResponse(t, "get", "/session/{sessionID}/message", "200", m2)
		if len(m2) == 0 {
			t.Fatalf("rebuilt child %s has no messages", c)
		}
		// Asking twice gives the same ids.
		again := arr(mustCall(t, 200, "GET", base2+"/session/"+c+"/message", ""))
		if get(again[0], "info", "id") != get(m2[0], "info", "id") || get(arr(get(again[0], "parts"))[0], "id") != get(arr(get(m2[0], "parts"))[0], "id") {
			t.Fatalf("rebuilt ids change between calls")
		}
	}
	// limit and before.
	if two := arr(mustCall(t, 200, "GET", base+"/session/"+rid+"/message?limit=2", "")); len(two) != 2 || get(two[1], "info", "id") != get(ans, "info", "id") {
		t.Fatalf("limit=2: %v", two)
	}
	if one := arr(mustCall(t, 200, "GET", base+"/session/"+rid+"/message?before="+str(get(msgs[1], "info", "id")), "")); len(one) != 1 {
		t.Fatalf("before: %v", one)
	}
}

func textOf(parts []any) string {
	var b strings.Builder
	for _, p := range parts {
		if get(p, "type") == "text" {
			b.WriteString(str(get(p, "text")))
		}
	}
	return b.String()
}

// lastText is the text of the last assistant message that has text.
func lastText(msgs []any) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if get(msgs[i], "info", "role") == "assistant" {
			if s := textOf(arr(get(msgs[i], "parts"))); s != "" {
				return s
			}
		}
	}
	return ""
}

func findTool(msgs []any, name string) any {
	for _, m := range msgs {
		for _, p := range arr(get(m, "parts")) {
			if get(p, "type") == "tool" && get(p, "tool") == name {
				return p
			}
		}
	}
	return nil
}
