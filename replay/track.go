package replay

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/agentpool/agentpool/agent"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
)

// Step kinds.
const (
	StepToolCall   = "tool_call"   // a tool call started: tool name and input
	StepToolResult = "tool_result" // its result ("error: " before a failed one)
	StepSpawn      = "spawn"       // a child session started: mechanism, type, run mode
	StepSpawnEnd   = "spawn_end"   // a child session ended: its stop reason
	StepAnswer     = "answer"      // a run completed: finish reason and final answer
	StepError      = "error"       // a run failed: its error code
)

// Step is one thing a session did that a replay must do again.
type Step struct {
	Turn  int    `json:"turn"` // model turns of the session so far (0: before the first)
	Kind  string `json:"kind"`
	Key   string `json:"key"`   // where in the turn: "call 1 Read", "call 2 task spawn panel #1", "run 1"
	Value string `json:"value"` // what is compared
}

func (s Step) id() string { return fmt.Sprintf("%d\x00%s\x00%s", s.Turn, s.Kind, s.Key) }

// runEnd is how one run of a session ended, at which turn.
type runEnd struct {
	turn   int
	usage  event.Usage
	finish string
}

// tracker follows the events one session produced (its own, unwrapped),
// in order, and turns them into Steps. The same tracker reads a stored
// log and a replay's live stream, so both are keyed alike.
type tracker struct {
	turn   int
	ncalls int             // tool call parts of the current turn
	calls  map[string]call // tool call id -> where the model made it
	spawns map[string]int  // spawn key without ordinal -> spawns so far
	// children are the spawn steps by child session id.
	children map[string]Step
	runs     int
	steps    []Step
	ends     []runEnd
	// summaries are the session's compaction summaries, in order.
	summaries []string
	// chunks, when not nil, collects each turn's response as the model
	// streamed it (a recording's: the cassette replays its chunking).
	chunks [][]model.Chunk
	index  map[int]int // part index of a tool call -> its chunk Index, this turn
}

// call is where a tool call sits: its turn, its position in the turn
// (1-based) and its tool.
type call struct {
	turn, pos int
	tool      string
}

func newTracker() *tracker {
	return &tracker{calls: map[string]call{}, spawns: map[string]int{}, children: map[string]Step{}}
}

// callKey is where the call with this id sits: its turn and position; a
// call no model part announced (a continued run's) is keyed by its id.
func (t *tracker) callKey(id string) (int, string) {
	if c, ok := t.calls[id]; ok {
		return c.turn, fmt.Sprintf("call %d %s", c.pos, c.tool)
	}
	return t.turn, "call " + id
}

// add takes the session's next event; for a spawn_session_start it
// returns the spawn's key (the same in the recording and the replay).
func (t *tracker) add(e event.Event) (spawnKey string) {
	switch v := e.(type) {
	case event.RunStarted:
		t.runs++
	case event.PartStart:
		if v.Index == 0 { // every model response numbers its parts from 0
			t.turn++
			t.ncalls = 0
			if t.chunks != nil {
				t.chunks = append(t.chunks, nil)
				clear(t.index)
			}
		}
		if v.Part.PartKind == event.PartToolCall {
			t.ncalls++
			t.calls[v.Part.ToolCallID] = call{turn: t.turn, pos: t.ncalls, tool: v.Part.ToolName}
			if t.chunks != nil && t.turn > 0 {
				t.index[v.Index] = t.ncalls - 1
				t.chunk(model.Chunk{Kind: model.ChunkToolCall, Index: t.ncalls - 1, ToolCallID: v.Part.ToolCallID, ToolName: v.Part.ToolName})
			}
		}
	case event.PartDelta:
		switch d := v.Delta; {
		case t.chunks == nil || t.turn == 0:
		case d.PartDeltaKind == event.PartText:
			t.chunk(model.Chunk{Kind: model.ChunkText, Text: d.ContentDelta})
		case d.PartDeltaKind == event.PartThinking:
			t.chunk(model.Chunk{Kind: model.ChunkThinking, Text: d.ContentDelta})
		case d.PartDeltaKind == event.PartToolCall:
			if k, ok := t.index[v.Index]; ok {
				t.chunk(model.Chunk{Kind: model.ChunkToolCall, Index: k, ArgsDelta: d.ArgsDelta})
			}
		}
	case event.ToolCallStart:
		turn, key := t.callKey(v.ToolCallID)
		t.steps = append(t.steps, Step{Turn: turn, Kind: StepToolCall, Key: key, Value: v.ToolName + " " + canonical(v.RawInput)})
	case event.ToolCallComplete:
		turn, key := t.callKey(v.ToolCallID)
		val := v.ToolResult
		if v.IsError {
			val = "error: " + val
		}
		t.steps = append(t.steps, Step{Turn: turn, Kind: StepToolResult, Key: key, Value: val})
	case event.SpawnSessionStart:
		turn, key := t.spawnKey(v.ToolCallID, v.SourceName)
		t.spawns[key]++
		key = fmt.Sprintf("%s #%d", key, t.spawns[key])
		st := Step{Turn: turn, Kind: StepSpawn, Key: key, Value: fmt.Sprintf("%s %s %s", v.SpawnMechanism, v.SourceType, v.RunMode)}
		t.steps = append(t.steps, st)
		t.children[v.ChildSessionID] = st
		return fmt.Sprintf("%d %s", turn, key)
	case event.SpawnSessionEnd:
		// Ends come in any order when children run in parallel: keyed by
		// the start they close, found by its child id.
		if s, ok := t.children[v.ChildSessionID]; ok {
			t.steps = append(t.steps, Step{Turn: s.Turn, Kind: StepSpawnEnd, Key: s.Key, Value: string(v.StopReason)})
		}
	case event.StreamComplete:
		t.steps = append(t.steps, Step{Turn: t.turn, Kind: StepAnswer, Key: fmt.Sprintf("run %d", t.runs),
			Value: v.Message.FinishReason + ": " + v.Message.Content})
		t.ends = append(t.ends, runEnd{turn: t.turn, usage: v.Message.Usage, finish: v.Message.FinishReason})
	case event.Custom:
		if v.EventType == agent.EventCompaction {
			summary, _ := v.EventData["summary"].(string)
			t.summaries = append(t.summaries, summary)
		}
	case event.RunError:
		t.steps = append(t.steps, Step{Turn: t.turn, Kind: StepError, Key: fmt.Sprintf("run %d", t.runs), Value: v.Code})
	}
	return ""
}

func (t *tracker) chunk(c model.Chunk) {
	t.chunks[len(t.chunks)-1] = append(t.chunks[len(t.chunks)-1], c)
}

func (t *tracker) spawnKey(toolCallID, name string) (int, string) {
	if toolCallID != "" {
		turn, key := t.callKey(toolCallID)
		return turn, key + " spawn " + name
	}
	return t.turn, "spawn " + name
}

// canonical is a JSON value with its object keys sorted and no spaces, so
// that two encodings of the same input compare equal; what is not JSON
// is kept as it is.
func canonical(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as written, not rounded through float64
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	out, err := json.Marshal(v) // maps are written with sorted keys
	if err != nil {
		return string(raw)
	}
	return string(out)
}
