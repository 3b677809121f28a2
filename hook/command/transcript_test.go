package command_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
)

type transcriptLine struct {
	ParentUUID  *string `json:"parentUuid"`
	UUID        string  `json:"uuid"`
	Type        string  `json:"type"`
	SessionID   string  `json:"sessionId"`
	AgentID     string  `json:"agentId"`
	IsSidechain bool    `json:"isSidechain"`
	IsMeta      bool    `json:"isMeta"`
	CWD         string  `json:"cwd"`
	Timestamp   string  `json:"timestamp"`
	Message     struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

func readTranscript(t *testing.T, path string) []transcriptLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []transcriptLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l transcriptLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// Transcripts are written in Claude Code's format under the transcript
// directory (root and subagents, chained by parentUuid), kept up to date
// across runs of a resumed session, and deleted with their session when
// the store is wrapped with CleanTranscripts; an owned directory goes when
// the store closes.
func TestTranscriptsWrittenAndCleaned(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "transcripts")
	os.WriteFile(filepath.Join(dir, "settings.json"), []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(`
hooks: {settings: settings.json}
agents:
  lead:
    tools: [subagent]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: helper, prompt: "Help."}}]
        - "lead done"
  helper: {model: {type: scripted, turns: ["helped"]}}
`), 0o644)
	m, err := config.Load(filepath.Join(dir, "agentpool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := command.LoadWith(m, command.Options{TranscriptDir: tdir})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	st := command.CleanTranscripts(memory.New(), tdir, true)
	p, err := pool.New(m, pool.Options{Hooks: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, event.Discard)
	if err != nil || res.Result.StopReason != event.StopCompleted {
		t.Fatalf("run: %v %v", err, res.Result)
	}
	kids, _ := st.ListSessions(ctx, session.ListOptions{ParentID: res.SessionID})
	child := kids[0].ID
	rootPath := command.TranscriptPath(tdir, res.SessionID, res.SessionID)
	childPath := command.TranscriptPath(tdir, res.SessionID, child)
	if rootPath != filepath.Join(tdir, res.SessionID+".jsonl") || childPath != filepath.Join(tdir, res.SessionID, "subagents", "agent-"+child+".jsonl") {
		t.Errorf("layout %s %s", rootPath, childPath)
	}
	root := readTranscript(t, rootPath)
	var kinds []string
	for i, l := range root {
		kinds = append(kinds, l.Type+":"+l.Message.Role)
		if l.SessionID != res.SessionID || l.IsSidechain || l.CWD != dir || l.Timestamp == "" || l.UUID == "" {
			t.Errorf("line %d %+v", i, l)
		}
		if (i == 0) != (l.ParentUUID == nil) || i > 0 && *l.ParentUUID != root[i-1].UUID {
			t.Errorf("line %d is not chained to the one before: %+v", i, l)
		}
	}
	if strings.Join(kinds, ",") != "user:user,assistant:assistant,user:user,assistant:assistant" {
		t.Errorf("root transcript %v", kinds)
	}
	if string(root[0].Message.Content) != `"go"` || !strings.Contains(string(root[2].Message.Content), `"type":"tool_result"`) {
		t.Errorf("root transcript content %s %s", root[0].Message.Content, root[2].Message.Content)
	}
	sub := readTranscript(t, childPath)
	if len(sub) != 2 || !sub[0].IsSidechain || sub[0].AgentID != child || sub[0].SessionID != res.SessionID {
		t.Errorf("subagent transcript %+v", sub)
	}

	// A second run of the session appends to its transcript.
	res2, err := p.RunSink(ctx, pool.RunRequest{Prompt: "again", SessionID: res.SessionID}, event.Discard)
	if err != nil || res2.Result.StopReason != event.StopCompleted {
		t.Fatalf("second run: %v %v", err, res2.Result)
	}
	again := readTranscript(t, rootPath)
	if len(again) <= len(root) || again[len(root)].Type != "user" || string(again[len(root)].Message.Content) != `"again"` ||
		*again[len(root)].ParentUUID != root[len(root)-1].UUID {
		t.Errorf("after the second run: %d lines (had %d)", len(again), len(root))
	}

	// Deleting the child removes its transcript only; deleting the root
	// removes the rest.
	if err := st.DeleteSession(ctx, child); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(childPath); !os.IsNotExist(err) {
		t.Errorf("child transcript after delete: %v", err)
	}
	if _, err := os.Stat(rootPath); err != nil {
		t.Errorf("root transcript gone with its child: %v", err)
	}
	if err := st.DeleteSession(ctx, res.SessionID); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(tdir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if len(names) != 0 {
		t.Errorf("left after deleting the root: %v", names)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tdir); !os.IsNotExist(err) {
		t.Errorf("the owned transcript directory outlived the store: %v", err)
	}
}
