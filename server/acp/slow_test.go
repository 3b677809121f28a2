package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// slowClientYAML: talker calls a tool, then streams a long answer word by
// word; quick answers at once.
func slowClientYAML(words int) string {
	return fmt.Sprintf(`
default_agent: talker
agents:
  talker:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: list_available_nodes, args: {}}]
        - %q
  quick:
    model: {type: scripted, turns: ["quick answer"]}
`, strings.TrimSpace(strings.Repeat("word ", words)))
}

// lockedLog is a concurrency-safe log buffer.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSlowClientBlocksNoOtherSession: a client that stops reading stdout
// holds up no other session. Two sessions prompt at once while the client
// reads nothing. The talker streams far more text than its bounded queue
// holds even coalesced (queueSize messages, chunks of at most 64 KiB), so
// it waits, within that bound; the quick session's run completes all the
// same. Once the client reads again it gets every lifecycle update, the
// whole text and both answers, each session's in order.
func TestSlowClientBlocksNoOtherSession(t *testing.T) {
	const (
		words     = 100000 // 500 KB of text: more than the talker's queue holds
		queueSize = 4
	)
	reg := hook.New(hook.Options{})
	ended := make(chan string, 3)
	reg.OnSessionEnd.Register(func(_ context.Context, e hook.SessionEnd) error {
		ended <- e.SessionID
		return nil
	})
	p := servertest.PoolWith(t, slowClientYAML(words), pool.Options{Hooks: reg})
	var logs lockedLog
	srv, err := New(Options{Pool: p, QueueSize: queueSize, ProgressInterval: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(context.Background(), inR, outW)
		outW.Close()
		served <- err
	}()

	// The client reads only when the test says so.
	br := bufio.NewReaderSize(outR, 1<<20)
	nextID := 0
	request := func(method string, params any) int {
		nextID++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nextID, "method": method, "params": params})
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
		return nextID
	}
	read := func() wire {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var w wire
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("invalid JSON %q: %v", line, err)
		}
		return w
	}
	result := func(id int) json.RawMessage {
		for {
			w := read()
			if string(w.ID) == strconv.Itoa(id) && w.Method == "" {
				if w.Error != nil {
					t.Fatalf("request %d failed: %v", id, w.Error)
				}
				return w.Result
			}
		}
	}
	result(request("initialize", map[string]any{"protocolVersion": 1}))
	var sess [2]string
	for i := range sess {
		var r struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(result(request("session/new", map[string]any{"cwd": "/", "mcpServers": []any{}})), &r)
		sess[i] = r.SessionID
	}
	result(request("session/set_mode", map[string]any{"sessionId": sess[1], "modeId": "quick"}))

	// Both prompts; from here the client reads nothing until the quick
	// run has ended.
	promptIDs := map[string]int{}
	for _, sid := range sess {
		promptIDs[sid] = request("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "talk"}}})
	}
	for quickEnded := false; !quickEnded; {
		select {
		case sid := <-ended:
			quickEnded = sid == sess[1]
		case <-time.After(60 * time.Second):
			buf := make([]byte, 1<<20)
			t.Logf("%s", buf[:runtime.Stack(buf, true)])
			t.Fatal("the quick run is blocked by the client that does not read the talker's output")
		}
	}

	// The talker's chunks coalesce in its full queue while the client reads
	// nothing, until a chunk no longer fits a coalesced one (64 KiB) and
	// the run waits for room: the queue group's notice of that wait.
	srv.mu.Lock()
	c := srv.conn
	srv.mu.Unlock()
	select {
	case <-c.out.group.Blocked():
	case <-time.After(time.Minute):
		t.Fatal("the talker's run never waited on its full queue")
	}
	if merged, _ := c.out.stats(); merged == 0 {
		t.Error("the talker waited on its queue, but no chunk coalesced first")
	}

	// Now read everything.
	type sessionOut struct {
		text    strings.Builder
		chunks  int
		kinds   []string // non-chunk updates, in order
		stop    string
		answers int
	}
	out := map[string]*sessionOut{sess[0]: {}, sess[1]: {}}
	for answered := 0; answered < 2; {
		w := read()
		if w.Method == "session/update" {
			var n struct {
				SessionID string `json:"sessionId"`
				Update    struct {
					SessionUpdate string          `json:"sessionUpdate"`
					Status        string          `json:"status"`
					Content       json.RawMessage `json:"content"`
				} `json:"update"`
			}
			if err := json.Unmarshal(w.Params, &n); err != nil {
				t.Fatal(err)
			}
			o := out[n.SessionID]
			if o == nil {
				t.Fatalf("update of unknown session %s", n.SessionID)
			}
			if o.answers > 0 {
				t.Errorf("%s: update %s after the prompt's answer", n.SessionID, n.Update.SessionUpdate)
			}
			if n.Update.SessionUpdate == updateAgentMessageChunk {
				var c contentBlock
				if err := json.Unmarshal(n.Update.Content, &c); err != nil {
					t.Fatal(err)
				}
				o.text.WriteString(c.Text)
				o.chunks++
				continue
			}
			o.kinds = append(o.kinds, n.Update.SessionUpdate+":"+n.Update.Status)
			continue
		}
		for sid, id := range promptIDs {
			if string(w.ID) == strconv.Itoa(id) {
				var r promptResult
				json.Unmarshal(w.Result, &r)
				out[sid].stop = r.StopReason
				out[sid].answers++
				answered++
			}
		}
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, br)

	talker, quick := out[sess[0]], out[sess[1]]
	want := strings.TrimSpace(strings.Repeat("word ", words))
	if talker.text.String() != want {
		t.Errorf("talker's text: %d bytes, want %d (a delta was lost)", talker.text.Len(), len(want))
	}
	if talker.chunks >= words {
		t.Errorf("talker got %d chunks for %d words: nothing was coalesced", talker.chunks, words)
	}
	if got := strings.Join(talker.kinds, " "); got != "session_info_update: tool_call:in_progress tool_call_update:completed" {
		t.Errorf("talker's lifecycle updates: %s", got)
	}
	if talker.stop != stopEndTurn || quick.stop != stopEndTurn {
		t.Errorf("stop reasons %q, %q", talker.stop, quick.stop)
	}
	if quick.text.String() != "quick answer" {
		t.Errorf("quick's text %q", quick.text.String())
	}
	// The queues stayed within their bound.
	mm := regexp.MustCompile(`merged=(\d+) longest_queue=(\d+)`).FindStringSubmatch(logs.String())
	if mm == nil {
		t.Fatalf("no coalescing reported:\n%s", logs.String())
	}
	merged, _ := strconv.Atoi(mm[1])
	longest, _ := strconv.Atoi(mm[2])
	t.Logf("%d chunks sent to the talker's session, %d coalesced, longest queue %d", talker.chunks, merged, longest)
	if longest > queueSize {
		t.Errorf("a queue held %d messages, bound %d", longest, queueSize)
	}
	if merged == 0 {
		t.Error("nothing was coalesced")
	}
}
