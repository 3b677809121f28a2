package agui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"regexp"
	"strings"
	"testing"
)

type ev = map[string]any

// parseSSE splits an SSE body into events, checking the framing.
func parseSSE(t *testing.T, body []byte) []ev {
	t.Helper()
	if bytes.Contains(body, []byte{'\r'}) {
		t.Fatal("SSE body contains CR")
	}
	s := string(body)
	if s != "" && !strings.HasSuffix(s, "\n\n") {
		t.Fatalf("SSE body does not end with a blank line: %q", tail(s))
	}
	var out []ev
	for _, frame := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		if frame == "" {
			continue
		}
		data, ok := strings.CutPrefix(frame, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("bad SSE frame %q", frame)
		}
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		var e ev
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("frame %q: %v", frame, err)
		}
		out = append(out, e)
	}
	return out
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

var openClose = regexp.MustCompile(`^(TEXT_MESSAGE|TOOL_CALL|REASONING_MESSAGE|REASONING|STEP)_(START|STARTED|END|FINISHED)$`)

// required and optional keys per type, as @ag-ui/core 1.0.0 declares them.
var eventKeys = map[string]string{
	wire.TypeRunStarted:              "threadId runId parentRunId protocolVersion",
	wire.TypeRunFinished:             "threadId runId result outcome",
	wire.TypeRunError:                "message code",
	wire.TypeStepStarted:             "subagentRunId stepName",
	wire.TypeStepFinished:            "subagentRunId stepName",
	wire.TypeTextMessageStart:        "subagentRunId messageId role",
	wire.TypeTextMessageContent:      "subagentRunId messageId delta",
	wire.TypeTextMessageEnd:          "subagentRunId messageId",
	wire.TypeToolCallStart:           "subagentRunId toolCallId toolCallName parentMessageId",
	wire.TypeToolCallArgs:            "subagentRunId toolCallId delta",
	wire.TypeToolCallEnd:             "subagentRunId toolCallId",
	wire.TypeToolCallResult:          "subagentRunId messageId toolCallId content role metadata",
	wire.TypeReasoningStart:          "subagentRunId messageId",
	wire.TypeReasoningMessageStart:   "subagentRunId messageId role",
	wire.TypeReasoningMessageContent: "subagentRunId messageId delta",
	wire.TypeReasoningMessageEnd:     "subagentRunId messageId",
	wire.TypeReasoningEnd:            "subagentRunId messageId",
	wire.TypeStateSnapshot:           "subagentRunId snapshot",
	wire.TypeStateDelta:              "subagentRunId delta",
	wire.TypeCustom:                  "subagentRunId name value",
	wire.TypeSubagentStarted:         "subagentRunId name description parentSubagentRunId parentToolCallId parentMessageId",
	wire.TypeSubagentFinished:        "subagentRunId result",
	wire.TypeSubagentError:           "subagentRunId message code",
	wire.TypeActivitySnapshot:        "subagentRunId messageId activityType content replace",
	wire.TypeActivityDelta:           "subagentRunId messageId activityType patch",
}

// verifyStream checks what the AG-UI client enforces, and a little more:
// RUN_STARTED first; one terminal event, last; every start closed before
// it; subagent ids never reused, parents started first, attributed events
// only while their subagent is open; known keys only, no nulls, integer
// timestamps. It returns the SUBAGENT_STARTED events by id.
func verifyStream(t *testing.T, evs []ev, rootID string) map[string]ev {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("empty stream")
	}
	if evs[0]["type"] != wire.TypeRunStarted {
		t.Fatalf("first event %v, want RUN_STARTED", evs[0]["type"])
	}
	open := map[string]bool{}
	started := map[string]ev{}
	active := map[string]bool{}
	calls := map[string]bool{}  // tool calls started (TOOL_CALL_START), by id
	acts := map[string]string{} // activity message id -> its subagent
	for i, e := range evs {
		typ, _ := e["type"].(string)
		where := fmt.Sprintf("event %d (%s)", i, typ)
		allowed, ok := eventKeys[typ]
		if !ok {
			t.Fatalf("%s: unexpected type", where)
		}
		for k, v := range e {
			if k != "type" && k != "timestamp" && !strings.Contains(" "+allowed+" ", " "+k+" ") {
				t.Errorf("%s: key %q is not in the schema", where, k)
			}
			checkNoNull(t, v, where+"."+k)
		}
		if ts, ok := e["timestamp"]; ok {
			n, isNum := ts.(json.Number)
			if _, err := n.Int64(); !isNum || err != nil {
				t.Errorf("%s: timestamp %v is not an integer", where, ts)
			}
		}
		if (typ == wire.TypeRunFinished || typ == wire.TypeRunError) != (i == len(evs)-1) {
			t.Fatalf("%s: RUN_FINISHED/RUN_ERROR must be the last event and only there", where)
		}
		sub, _ := e["subagentRunId"].(string)
		if sub != "" && !strings.HasPrefix(typ, "SUBAGENT_") && !active[sub] {
			t.Errorf("%s: attributed to subagent %s, which is not open", where, sub)
		}
		if m := openClose.FindStringSubmatch(typ); m != nil {
			id := fmt.Sprint(e["messageId"], e["toolCallId"], e["stepName"])
			k := m[1] + "|" + sub + "|" + id
			if strings.HasPrefix(m[2], "START") {
				if open[k] {
					t.Errorf("%s: %s opened twice", where, k)
				}
				open[k] = true
			} else {
				if !open[k] {
					t.Errorf("%s: %s closed but not open", where, k)
				}
				delete(open, k)
			}
		}
		switch typ {
		case wire.TypeToolCallStart:
			calls[fmt.Sprint(e["toolCallId"])] = true
		case wire.TypeToolCallResult:
			// A result belongs to a call the client was shown.
			if !calls[fmt.Sprint(e["toolCallId"])] {
				t.Errorf("%s: result of tool call %v, which never started", where, e["toolCallId"])
			}
		case wire.TypeActivitySnapshot:
			if _, dup := acts[fmt.Sprint(e["messageId"])]; dup {
				t.Errorf("%s: activity %v announced twice", where, e["messageId"])
			}
			acts[fmt.Sprint(e["messageId"])] = sub
		case wire.TypeActivityDelta:
			// A patch of an activity announced before, by the same subagent.
			if owner, ok := acts[fmt.Sprint(e["messageId"])]; !ok || owner != sub {
				t.Errorf("%s: patch of activity %v (of %q) by %q", where, e["messageId"], owner, sub)
			}
		case wire.TypeSubagentStarted:
			if _, dup := started[sub]; dup {
				t.Errorf("%s: subagentRunId %s reused", where, sub)
			}
			if sub == rootID {
				t.Errorf("%s: the root session is no subagent", where)
			}
			if p, ok := e["parentSubagentRunId"].(string); ok && started[p] == nil {
				t.Errorf("%s: parent subagent %s not started", where, p)
			}
			started[sub] = e
			active[sub] = true
		case wire.TypeSubagentFinished, wire.TypeSubagentError:
			if !active[sub] {
				t.Errorf("%s: subagent %s not open", where, sub)
			}
			delete(active, sub)
		}
	}
	last, _ := evs[len(evs)-1]["type"].(string)
	if last != wire.TypeRunFinished && last != wire.TypeRunError {
		t.Fatalf("last event %s, want RUN_FINISHED or RUN_ERROR", last)
	}
	if len(open) > 0 || len(active) > 0 {
		t.Errorf("still open at %s: %v, subagents %v", last, open, active)
	}
	return started
}

func checkNoNull(t *testing.T, v any, where string) {
	t.Helper()
	if v == nil {
		t.Errorf("%s is null", where)
		return
	}
	if strings.HasSuffix(where, ".snapshot") || strings.HasSuffix(where, ".value") || strings.HasSuffix(where, ".metadata") {
		return // client state, custom values and metadata are data: null is allowed inside
	}
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			checkNoNull(t, y, where+"."+k)
		}
	case []any:
		for i, y := range x {
			checkNoNull(t, y, fmt.Sprintf("%s[%d]", where, i))
		}
	}
}

// activities applies the subagents' ACTIVITY_SNAPSHOT and ACTIVITY_DELTA
// events of a stream as a client does, and returns each subagent's
// activity content by subagentRunId. Each tool call entry also gets
// "resultAt": the index of the event that added its result.
func activities(t *testing.T, evs []ev) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for i, e := range evs {
		sub, _ := e["subagentRunId"].(string)
		switch e["type"] {
		case wire.TypeActivitySnapshot:
			// A copy: the patches must not change the parsed stream.
			var content map[string]any
			b, _ := json.Marshal(e["content"])
			if err := json.Unmarshal(b, &content); err != nil {
				t.Fatal(err)
			}
			out[sub] = content
		case wire.TypeActivityDelta:
			doc := out[sub]
			for _, o := range e["patch"].([]any) {
				op := o.(map[string]any)
				path := op["path"].(string)
				// A copy too: the appends grow the lists a value holds.
				var value any
				b, _ := json.Marshal(op["value"])
				if err := json.Unmarshal(b, &value); err != nil {
					t.Fatal(err)
				}
				if err := applyActOp(doc, op["op"].(string), path, value); err != nil {
					t.Fatalf("event %d: %s %s: %v", i, op["op"], path, err)
				}
				if strings.HasPrefix(path, "/toolCalls/") && strings.HasSuffix(path, "/result") {
					var n int
					fmt.Sscanf(path, "/toolCalls/%d/result", &n)
					doc["toolCalls"].([]any)[n].(map[string]any)["resultAt"] = i
				}
			}
		}
	}
	return out
}

// applyActOp applies one add or replace (the ops the server sends) to doc.
// A list's text pieces are appended to ("/-"), never replaced; no list
// but the top level's is replaced whole.
func applyActOp(doc map[string]any, op, path string, value any) error {
	keys := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var parent any // the container of cur, to set an appended list back
	var cur any = doc
	for _, k := range keys[:len(keys)-1] {
		parent = cur
		switch c := cur.(type) {
		case map[string]any:
			cur = c[k]
		case []any:
			var n int
			if _, err := fmt.Sscanf(k, "%d", &n); err != nil || n >= len(c) {
				return fmt.Errorf("no element %s", k)
			}
			cur = c[n]
		default:
			return fmt.Errorf("no container at %s", k)
		}
	}
	last := keys[len(keys)-1]
	switch c := cur.(type) {
	case map[string]any:
		if op == "replace" {
			old, ok := c[last]
			if !ok {
				return fmt.Errorf("replace of a missing member %s", last)
			}
			if _, ok := old.([]any); ok {
				return fmt.Errorf("a list replaced whole")
			}
		}
		if _, ok := c[last].([]any); ok {
			return fmt.Errorf("a list added over")
		}
		c[last] = value
	case []any:
		if op == "add" && last == "-" {
			k := keys[len(keys)-2]
			switch p := parent.(type) {
			case map[string]any:
				p[k] = append(c, value)
			case []any:
				var n int
				fmt.Sscanf(k, "%d", &n)
				p[n] = append(c, value)
			}
			return nil
		}
		var n int
		if _, err := fmt.Sscanf(last, "%d", &n); err != nil || n >= len(c) || op != "replace" {
			return fmt.Errorf("bad list op %s %s", op, last)
		}
		c[n] = value
	default:
		return fmt.Errorf("no container for %s", last)
	}
	return nil
}

// pieces joins a list of text pieces (a message's content, a call's
// arguments in an activity).
func pieces(t *testing.T, v any) string {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("text pieces: %T, want a list", v)
	}
	var b strings.Builder
	for _, p := range l {
		s, ok := p.(string)
		if !ok {
			t.Fatalf("text piece: %T, want a string", p)
		}
		b.WriteString(s)
	}
	return b.String()
}

// activityText is each subagent's assistant text (its activity's
// messages joined), by subagentRunId.
func activityText(t *testing.T, evs []ev) map[string]string {
	t.Helper()
	out := map[string]string{}
	for sub, a := range activities(t, evs) {
		for _, m := range a["messages"].([]any) {
			if m := m.(map[string]any); m["role"] == "assistant" {
				out[sub] += pieces(t, m["content"])
			}
		}
	}
	return out
}

// activityCall is the tool call entry named name (or with id name) in
// any subagent's activity, nil if none.
func activityCall(t *testing.T, evs []ev, name string) map[string]any {
	t.Helper()
	for _, a := range activities(t, evs) {
		for _, c := range a["toolCalls"].([]any) {
			if c := c.(map[string]any); c["name"] == name || c["id"] == name {
				return c
			}
		}
	}
	return nil
}
