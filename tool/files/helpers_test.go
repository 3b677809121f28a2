package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// env is a workspace in a temporary directory with a toolset on it.
type env struct {
	t    testing.TB
	root string // the workspace root (symlinks resolved)
	out  string // a directory outside the workspace
	ts   *Toolset
	ctx  context.Context
}

func newEnv(t testing.TB) *env {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, out := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{root, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, root: ws.Root(), out: out, ts: New(ws), ctx: context.Background()}
}

func (e *env) tool(name string) tool.Tool {
	e.t.Helper()
	for _, tl := range e.ts.Tools() {
		if tl.Info().Name == name {
			return tl
		}
	}
	e.t.Fatalf("no tool %s", name)
	return nil
}

// call runs a tool for session sid; args is marshalled to JSON.
func (e *env) call(name, sid string, args any) tool.Result {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.callRaw(e.ctx, name, sid, raw)
}

func (e *env) callRaw(ctx context.Context, name, sid string, raw json.RawMessage) tool.Result {
	e.t.Helper()
	res, err := e.tool(name).Call(ctx, tool.Call{ID: "call_1", Name: name, Args: raw, SessionID: sid})
	if err != nil {
		e.t.Fatalf("%s returned an error: %v", name, err)
	}
	if !utf8.ValidString(res.Content) {
		e.t.Fatalf("%s result holds invalid UTF-8: %q", name, res.Content)
	}
	return res
}

// ok fails unless res is a success.
func (e *env) ok(res tool.Result) tool.Result {
	e.t.Helper()
	if res.IsError {
		e.t.Fatalf("unexpected error result: %s", res.Content)
	}
	return res
}

// fails fails unless res is an error result containing every want.
func (e *env) fails(res tool.Result, want ...string) {
	e.t.Helper()
	if !res.IsError {
		e.t.Fatalf("want an error result, got: %s", res.Content)
	}
	for _, w := range want {
		if !strings.Contains(res.Content, w) {
			e.t.Fatalf("error result %q does not contain %q", res.Content, w)
		}
	}
}

// file writes a file below the root (rel) or anywhere (absolute).
func (e *env) file(p, content string) string {
	e.t.Helper()
	if !filepath.IsAbs(p) {
		p = filepath.Join(e.root, p)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) symlink(target, rel string) string {
	e.t.Helper()
	p := filepath.Join(e.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) content(p string) string {
	e.t.Helper()
	if !filepath.IsAbs(p) {
		p = filepath.Join(e.root, p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(b)
}

// touch sets a file's modification time to base+offset.
func (e *env) touch(p string, offset time.Duration) {
	e.t.Helper()
	if !filepath.IsAbs(p) {
		p = filepath.Join(e.root, p)
	}
	tm := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(offset)
	if err := os.Chtimes(p, tm, tm); err != nil {
		e.t.Fatal(err)
	}
}

type m = map[string]any

func callOf(name, args string) tool.Call {
	return tool.Call{ID: "call_1", Name: name, Args: json.RawMessage(args), SessionID: "s1"}
}
