// Transcripts: the sessions' conversations as Claude Code writes them, so
// that hooks reading transcript_path or agent_transcript_path find what
// they would find in Claude Code.

package command

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/spawn"
)

// A transcript is a JSONL file, one JSON object per line in Claude Code's
// transcript format: type user or assistant, message {role, content}
// (content blocks text, thinking, tool_use, tool_result; a user's plain
// prompt is a string), uuid and parentUuid chaining the lines, sessionId
// (the root session), timestamp, cwd, isSidechain and agentId in a
// subagent's. It is built from the session's stored messages (a team keeps
// none: its transcript is the prompts and outputs of its runs) and brought
// up to date before a hook that is given its path runs and when the
// session ends. The layout follows Claude Code's:
//
//	DIR/<root session id>.jsonl
//	DIR/<root session id>/subagents/agent-<child session id>.jsonl
//
// Deleting a session through a store wrapped with CleanTranscripts removes
// its transcripts.

// transcripts writes the transcripts under one directory.
type transcripts struct {
	cwd string
	log *slog.Logger

	mu     sync.Mutex
	dir    string // "" until a temporary one is made (temp)
	temp   bool
	closed bool
	files  map[string]*tfile // session id -> its transcript
}

// tfile is the state of one transcript file in this process.
type tfile struct {
	mu     sync.Mutex
	path   string
	loaded bool   // written by this process (else rewritten from the start)
	team   *bool  // whether the session keeps no messages (nil: not looked up)
	n      int    // stored messages written
	last   string // uuid of the last line
}

func newTranscripts(dir, cwd string, log *slog.Logger) *transcripts {
	return &transcripts{dir: dir, temp: dir == "", cwd: cwd, log: log, files: map[string]*tfile{}}
}

// TranscriptPath is the transcript of session id under dir, whose root
// session is root (id itself for a root session).
func TranscriptPath(dir, root, id string) string {
	if id == root {
		return filepath.Join(dir, root+".jsonl")
	}
	return filepath.Join(dir, root, "subagents", "agent-"+id+".jsonl")
}

// safeID reports whether a session id can name a file.
func safeID(id string) bool {
	return id != "" && id != "." && id != ".." && filepath.Base(id) == id
}

// file returns the state of id's transcript, making the directory it goes
// in; nil when there is none (closed, or the directory cannot be made).
func (t *transcripts) file(root, id string) *tfile {
	if !safeID(root) || !safeID(id) {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	if f := t.files[id]; f != nil {
		return f
	}
	if t.dir == "" {
		d, err := os.MkdirTemp("", "agentpool-transcripts-")
		if err != nil {
			t.log.Warn("transcripts: no temporary directory", "err", err)
			return nil
		}
		t.dir = d
	}
	p := TranscriptPath(t.dir, root, id)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.log.Warn("transcripts: cannot make the directory", "err", err)
		return nil
	}
	f := &tfile{path: p}
	t.files[id] = f
	return f
}

// forget drops what this process knows of the transcripts of ids (a later
// sync rewrites them from the store).
func (t *transcripts) forget(ids ...string) {
	t.mu.Lock()
	for _, id := range ids {
		delete(t.files, id)
	}
	t.mu.Unlock()
}

func (t *transcripts) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.temp && t.dir != "" {
		return os.RemoveAll(t.dir)
	}
	return nil
}

// transcriptSource is where a transcript's content comes from.
type transcriptSource struct {
	store session.Store
	rt    *spawn.Runtime
	team  func(id string) []teamTurn // a team's runs
}

// sync brings the transcript of session id (root: its root session) up to
// date and returns its path ("" when it cannot be written; logged).
func (t *transcripts) sync(ctx context.Context, src transcriptSource, root, id string) string {
	f := t.file(root, id)
	if f == nil {
		return ""
	}
	ctx = context.WithoutCancel(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.team == nil {
		s, err := src.store.GetSession(ctx, id)
		if err != nil {
			t.log.Warn("transcript: session", "session", id, "err", err)
			return f.path
		}
		team := s.SourceType != event.SourceAgent
		f.team = &team
	}
	w := lineWriter{root: root, id: id, cwd: t.cwd, last: f.last}
	if *f.team {
		// A team's runs are few: its transcript is written whole.
		w.last = ""
		for _, run := range src.team(id) {
			w.text(model.RoleUser, run.prompt, "", run.at, run.runID+"/prompt")
			if run.output != "" {
				w.text(model.RoleAssistant, run.output, "", run.at, run.runID+"/output")
			}
		}
		if err := os.WriteFile(f.path, w.buf.Bytes(), 0o600); err != nil {
			t.log.Warn("transcript: write", "path", f.path, "err", err)
		}
		return f.path
	}
	msgs, err := src.store.Messages(ctx, id)
	if err != nil {
		t.log.Warn("transcript: messages", "session", id, "err", err)
		return f.path
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if !f.loaded {
		// Written by another process (an earlier run of a resumed session)
		// or not at all: start again from the store.
		flags |= os.O_TRUNC
		f.n, w.last = 0, ""
	}
	if f.n > len(msgs) {
		f.n = len(msgs)
	}
	for _, m := range msgs[f.n:] {
		w.message(m, modelOf(src.rt, m.AgentName))
	}
	fh, err := os.OpenFile(f.path, flags, 0o600)
	if err != nil {
		t.log.Warn("transcript: open", "path", f.path, "err", err)
		return f.path
	}
	_, werr := fh.Write(w.buf.Bytes())
	if cerr := fh.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		t.log.Warn("transcript: write", "path", f.path, "err", werr)
		f.loaded = false // rewrite next time
		return f.path
	}
	f.loaded, f.n, f.last = true, len(msgs), w.last
	return f.path
}

func modelOf(rt *spawn.Runtime, agentName string) string {
	if rt == nil {
		return ""
	}
	if n, ok := rt.Lookup(agentName); ok {
		return n.ModelID()
	}
	return ""
}

// lineWriter appends transcript lines to buf.
type lineWriter struct {
	root, id, cwd string
	last          string // uuid of the previous line
	buf           bytes.Buffer
}

// line is one transcript line.
type line struct {
	ParentUUID  *string `json:"parentUuid"`
	IsSidechain bool    `json:"isSidechain"`
	UserType    string  `json:"userType"`
	CWD         string  `json:"cwd"`
	SessionID   string  `json:"sessionId"`
	Version     string  `json:"version"`
	AgentID     string  `json:"agentId,omitempty"`
	Type        string  `json:"type"`
	Message     lineMsg `json:"message"`
	IsMeta      bool    `json:"isMeta,omitempty"`
	UUID        string  `json:"uuid"`
	Timestamp   string  `json:"timestamp"`
}

type lineMsg struct {
	ID      string `json:"id,omitempty"`
	Type    string `json:"type,omitempty"` // "message" for an assistant's
	Role    string `json:"role"`
	Model   string `json:"model,omitempty"`
	Content any    `json:"content"` // a string, or content blocks
}

// uuid is a stable UUID-shaped id of one line (the same message gets the
// same uuid when a transcript is rewritten).
func (w *lineWriter) uuid(key string) string {
	h := sha1.Sum([]byte(w.id + "\x00" + key))
	h[6] = h[6]&0x0f | 0x50 // version 5
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func (w *lineWriter) add(kind string, msg lineMsg, meta bool, at time.Time, key string) {
	l := line{IsSidechain: w.id != w.root, UserType: "external", CWD: w.cwd, SessionID: w.root, Version: "agentpool",
		Type: kind, Message: msg, IsMeta: meta, UUID: w.uuid(key), Timestamp: at.UTC().Format("2006-01-02T15:04:05.000Z")}
	if w.last != "" {
		p := w.last
		l.ParentUUID = &p
	}
	if w.id != w.root {
		l.AgentID = w.id
	}
	b, err := json.Marshal(l)
	if err != nil {
		return
	}
	w.buf.Write(b)
	w.buf.WriteByte('\n')
	w.last = l.UUID
}

// text adds a plain text message.
func (w *lineWriter) text(role model.Role, text, modelID string, at time.Time, key string) {
	if role == model.RoleAssistant {
		w.add("assistant", lineMsg{ID: key, Type: "message", Role: "assistant", Model: modelID,
			Content: []any{map[string]any{"type": "text", "text": text}}}, false, at, key)
		return
	}
	w.add("user", lineMsg{Role: "user", Content: text}, false, at, key)
}

// message adds one stored message: an assistant's with its content blocks
// (tool calls in Claude Code's vocabulary), a user's prompt as a string
// (isMeta when the runtime added it: injected context, a hook's reason),
// tool results as a user's tool_result blocks.
func (w *lineWriter) message(m session.Message, modelID string) {
	switch m.Role {
	case model.RoleAssistant:
		var blocks []any
		for _, p := range m.Parts {
			switch p.Kind {
			case model.PartText:
				blocks = append(blocks, map[string]any{"type": "text", "text": p.Text})
			case model.PartThinking:
				blocks = append(blocks, map[string]any{"type": "thinking", "thinking": p.Text})
			case model.PartToolCall:
				v := presentTool(p.ToolName, p.Args)
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": p.ToolCallID, "name": v.name, "input": v.input})
			}
		}
		if blocks == nil {
			blocks = []any{}
		}
		w.add("assistant", lineMsg{ID: m.ID, Type: "message", Role: "assistant", Model: modelID, Content: blocks}, false, m.CreatedAt, m.ID)
	case model.RoleTool:
		var blocks []any
		for _, p := range m.Parts {
			if p.Kind == model.PartToolResult {
				b := map[string]any{"type": "tool_result", "tool_use_id": p.ToolCallID, "content": p.Text}
				if p.IsError {
					b["is_error"] = true
				}
				blocks = append(blocks, b)
			}
		}
		if blocks == nil {
			blocks = []any{}
		}
		w.add("user", lineMsg{Role: "user", Content: blocks}, false, m.CreatedAt, m.ID)
	default:
		w.add("user", lineMsg{Role: "user", Content: m.Text()}, m.Synthetic, m.CreatedAt, m.ID)
	}
}

// teamTurn is one run of a team (a node that keeps no messages): its
// prompt and, once it ended, its output.
type teamTurn struct {
	runID  string
	prompt string
	output string
	at     time.Time
}

// noteRun remembers the prompt of a run of a team, seen in the context of
// a hook that fires in it (its members' SubagentStart, a root team's
// SessionStart and prompt).
func (b *Bridge) noteRun(inv *spawn.Invocation) {
	if inv == nil || inv.Session.SourceType == event.SourceAgent {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	runs := b.teamRuns[inv.Session.ID]
	if n := len(runs); n > 0 && runs[n-1].runID == inv.RunID {
		return
	}
	b.teamRuns[inv.Session.ID] = append(runs, teamTurn{runID: inv.RunID, prompt: inv.Prompt, at: time.Now()})
}

// teamOutput records the output of a team's latest run.
func (b *Bridge) teamOutput(id, output string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if runs := b.teamRuns[id]; len(runs) > 0 && runs[len(runs)-1].output == "" {
		runs[len(runs)-1].output = output
	}
}

func (b *Bridge) teamTurns(id string) []teamTurn {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]teamTurn(nil), b.teamRuns[id]...)
}

// transcript brings the transcript of session id (of root) up to date and
// returns its path; "" without a store.
func (b *Bridge) transcript(ctx context.Context, inv *spawn.Invocation, root, id string) string {
	if inv == nil || inv.Runtime == nil || inv.Runtime.Store() == nil {
		return ""
	}
	return b.tr.sync(ctx, transcriptSource{store: inv.Runtime.Store(), rt: inv.Runtime, team: b.teamTurns}, root, id)
}
