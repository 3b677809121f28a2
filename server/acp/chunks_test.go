package acp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/model/testmodel"
	"github.com/agentpool/agentpool/pool"
)

// TestLongMessagesChunked: a prompt and an answer over 10 MiB each (2 MiB
// under the race detector) reach
// the client, live and replayed by session/load, as several message
// chunks on lines well under 1 MiB (clients read lines with a bounded
// buffer), that together give the whole text, multi-byte characters
// intact.
func TestLongMessagesChunked(t *testing.T) {
	const maxLine = 512 << 10
	size := 11 << 20
	if raceEnabled {
		size = 2 << 20 // still lines of more than 1 MiB without chunking
	}
	answer := strings.Repeat("é-answer-", size/10)
	prompt := strings.Repeat("ü-prompt-", size/10)
	// Built in Go: a manifest of that size takes long to parse under -race.
	m, err := testmodel.New(testmodel.Config{Turns: []testmodel.Turn{{Text: answer}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.Build(pool.Config{Agents: []pool.AgentSpec{{Name: "long", Model: m}}}, pool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })

	// collect sends a request and gathers the text of the message chunks
	// up to its response, checking every line on the way.
	collect := func(h *harness, method string, params any) (user, agent string) {
		t.Helper()
		id := h.request(method, params)
		var u, a strings.Builder
		for {
			w := h.next()
			if len(w.line) > maxLine {
				t.Fatalf("%s: a line of %d bytes (%.40q...)", method, len(w.line), w.line)
			}
			if string(w.ID) == id && w.Method == "" {
				if w.Error != nil {
					t.Fatalf("%s: %s", method, w.line)
				}
				return u.String(), a.String()
			}
			var n note
			if w.Method != methodSessionUpdate || json.Unmarshal(w.Params, &n) != nil {
				continue
			}
			var c contentBlock
			_ = json.Unmarshal(n.Update.Content, &c)
			switch n.Update.SessionUpdate {
			case updateUserMessageChunk:
				u.WriteString(c.Text)
			case updateAgentMessageChunk:
				a.WriteString(c.Text)
			}
		}
	}

	h := startServer(t, p, Options{})
	h.timeout = time.Minute
	h.initialize(false)
	sid := h.newSession()
	if _, live := collect(h, "session/prompt", promptParams(sid, prompt)); live != answer {
		t.Errorf("live answer: %d bytes, want %d", len(live), len(answer))
	}
	h.close()

	h2 := startServer(t, p, Options{})
	h2.timeout = time.Minute
	h2.initialize(false)
	user, agent := collect(h2, "session/load", map[string]any{"sessionId": sid, "cwd": "/work", "mcpServers": []any{}})
	if user != prompt || agent != answer {
		t.Errorf("replay: prompt %d bytes (want %d), answer %d bytes (want %d)", len(user), len(prompt), len(agent), len(answer))
	}
}
