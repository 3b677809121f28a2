package command_test

// The test project: a temporary directory with a manifest, settings and
// hook scripts, its pool and registry, and readers of what ran.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/hook/command"
	"github.com/agentpool/agentpool/internal/proctree/proctreetest"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// As under the CLI, the test process is a subreaper: what a hook leaves
// behind is reparented to it, killed with the hook's tree and reaped.
func TestMain(m *testing.M) { proctreetest.VerifyTestMain(m) }

// probe is a tool that records its calls.
type probe struct {
	mu    sync.Mutex
	calls []string
}

func (p *probe) Info() tool.Info {
	return tool.Info{Name: "probe", Description: "probe", Parameters: []byte(`{"type":"object"}`)}
}

func (p *probe) Call(_ context.Context, c tool.Call) (tool.Result, error) {
	p.mu.Lock()
	p.calls = append(p.calls, string(c.Args))
	p.mu.Unlock()
	return tool.Result{Content: "probe ran with " + string(c.Args)}, nil
}

func (p *probe) ran() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// project is a temporary project directory with a manifest, a settings
// file and hook scripts.
type project struct {
	t    *testing.T
	dir  string
	logs *syncBuffer
	reg  *hook.Registry
	pool *pool.Pool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newProject writes manifest, settings and scripts (name -> body) into a
// temporary directory and builds the pool.
func newProject(t *testing.T, manifest, settings string, scripts map[string]string, tools ...tool.Tool) *project {
	t.Helper()
	files := map[string]string{
		"agentpool.yaml":        manifest + "\nhooks: {settings: .claude/settings.json}\n",
		".claude/settings.json": settings,
	}
	for name, body := range scripts {
		files["hooks/"+name] = "#!/bin/sh\n" + body + "\n"
	}
	return buildProject(t, files, tools...)
}

// buildProject writes files (path -> content; those under hooks/ are
// executable) into a temporary directory and builds the pool of its
// agentpool.yaml, with the registry command.LoadWith makes.
func buildProject(t *testing.T, files map[string]string, tools ...tool.Tool) *project {
	t.Helper()
	dir := t.TempDir()
	p := &project{t: t, dir: dir, logs: &syncBuffer{}}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "hooks/") {
			mode = 0o755
		}
		if err := os.WriteFile(path, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	m, err := config.Load(filepath.Join(dir, "agentpool.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p.reg, err = command.LoadWith(m, command.Options{Logger: slog.New(slog.NewTextHandler(p.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p.pool, err = pool.New(m, pool.Options{Hooks: p.reg, ExtraTools: tools})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.pool.Close()
		// Ends background hooks and removes the temporary transcripts.
		if err := p.reg.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return p
}

func (p *project) run(prompt string) pool.RunResult {
	p.t.Helper()
	res, err := p.pool.RunSink(context.Background(), pool.RunRequest{Prompt: prompt}, event.Discard)
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

func (p *project) messages(sid string) []session.Message {
	p.t.Helper()
	ms, err := p.pool.Store().Messages(context.Background(), sid)
	if err != nil {
		p.t.Fatal(err)
	}
	return ms
}

func (p *project) toolResults(sid string) []model.Part {
	var out []model.Part
	for _, m := range p.messages(sid) {
		for _, part := range m.Parts {
			if part.Kind == model.PartToolResult {
				out = append(out, part)
			}
		}
	}
	return out
}

// hookRuns returns the hook_run records of a session's event log.
func (p *project) hookRuns(sid string) []map[string]any {
	p.t.Helper()
	recs, err := p.pool.Store().Events(context.Background(), sid, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	var out []map[string]any
	for _, r := range recs {
		if c, ok := r.Event.(event.Custom); ok && c.EventType == command.EventHookRun {
			out = append(out, c.EventData)
		}
	}
	return out
}

// children returns the child sessions of a session.
func (p *project) children(sid string) []session.Session {
	p.t.Helper()
	kids, err := p.pool.Store().ListSessions(context.Background(), session.ListOptions{ParentID: sid})
	if err != nil {
		p.t.Fatal(err)
	}
	return kids
}

// payloads reads the JSON lines a hook script appended to a file.
func (p *project) payloads(name string) []map[string]any {
	p.t.Helper()
	f, err := os.Open(filepath.Join(p.dir, name))
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			p.t.Fatalf("payload %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

const probeManifest = `
agents:
  main:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: probe, args: {path: /tmp/x}}]
        - text: "done"
`

func settingsFor(event, matcher, command string, timeout int) string {
	h := map[string]any{"type": "command", "command": command}
	if timeout > 0 {
		h["timeout"] = timeout
	}
	g := map[string]any{"hooks": []any{h}}
	if matcher != "" {
		g["matcher"] = matcher
	}
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{event: []any{g}}})
	return string(b)
}
