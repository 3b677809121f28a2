package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/checkpoint"
	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session/memory"
)

// writeFiles writes each file (slash paths) of ws, making directories.
func writeFiles(t *testing.T, ws string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(ws, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// What the workspace's .gitignore files ignore (the root's and a nested
// one, negation, a directory pattern, an anchored one) is not looked at:
// a Bash that changes it and tracked files alike has only the tracked
// files captured, so a rewind restores those and leaves the ignored ones
// as they are. The ignored files cost no bound: a workspace whose
// node_modules holds more files than the scan looks at is scanned whole.
func TestWatchSkipsIgnored(t *testing.T) {
	defer checkpoint.SetScanBounds(10, 1<<20)()
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	ws := t.TempDir()
	files := map[string]string{
		".gitignore":      "node_modules/\n*.log\n!keep.log\n",
		"src/a.txt":       "tracked\n",
		"app.log":         "ignored log\n",
		"keep.log":        "kept log\n",
		"sub/.gitignore":  "/gen/\n",
		"sub/gen/out.txt": "generated\n",
		"sub/x/gen/y.txt": "not under sub/gen\n",
	}
	for i := range 30 {
		files["node_modules/p/f"+strings.Repeat("x", i)+".js"] = "module\n"
	}
	writeFiles(t, ws, files)
	p := newPool(t, `
agents:
  a:
    tools: [execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "for f in src/a.txt app.log keep.log sub/gen/out.txt sub/x/gen/y.txt node_modules/p/fx.js; do echo changed > $f; done; echo new > node_modules/new.js"}}]
        - "done"
`, st, ws)
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, st, res.SessionID)
	for _, m := range msgs {
		for _, part := range m.Parts {
			if part.Kind == model.PartToolResult && strings.Contains(part.Text, "[checkpoint:") {
				t.Errorf("the Bash result says %q: the ignored files were counted", part.Text)
			}
		}
	}
	rw, err := checkpoint.Rewind(ctx, st, res.SessionID, msgs[0].ID, checkpoint.Code)
	if err != nil {
		t.Fatalf("rewind: %+v, %v", rw, err)
	}
	var restored []string
	for _, f := range rw.Files {
		restored = append(restored, f.Path)
	}
	if strings.Join(restored, " ") != "keep.log src/a.txt sub/x/gen/y.txt" {
		t.Errorf("rewind restored %q, want the files .gitignore does not ignore", restored)
	}
	for _, f := range []string{"src/a.txt", "keep.log", "sub/x/gen/y.txt"} {
		expectFile(t, ws, f, []byte(files[f]), 0o644)
	}
	for _, f := range []string{"app.log", "sub/gen/out.txt", "node_modules/p/fx.js"} {
		expectFile(t, ws, f, []byte("changed\n"), 0o644)
	}
	expectFile(t, ws, "node_modules/new.js", []byte("new\n"), 0o644)
}

// A call that changes .gitignore itself captures .gitignore, and what
// its change hides or shows is not taken for a removal or a creation: a
// build output shown by a line removed from .gitignore is not removed by
// the rewind, one hidden by a line added is not written back.
func TestWatchIgnoreChanged(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	defer st.Close()
	ws := t.TempDir()
	files := map[string]string{
		".gitignore":  "build/\n",
		"build/out.o": "object\n",
		"dist/app.js": "bundle\n",
		"src/main.c":  "int main;\n",
	}
	writeFiles(t, ws, files)
	p := newPool(t, `
agents:
  a:
    tools: [execution]
    model:
      type: scripted
      turns:
        - tool_calls: [{name: Bash, args: {command: "printf 'dist/\\n' > .gitignore && echo changed > src/main.c"}}]
        - "done"
`, st, ws)
	res, err := p.RunSink(ctx, pool.RunRequest{Prompt: "go"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, st, res.SessionID)
	rw, err := checkpoint.Rewind(ctx, st, res.SessionID, msgs[0].ID, checkpoint.Code)
	if err != nil {
		t.Fatalf("rewind: %+v, %v", rw, err)
	}
	var restored []string
	for _, f := range rw.Files {
		restored = append(restored, f.Path+":"+f.Action)
	}
	if strings.Join(restored, " ") != ".gitignore:restored src/main.c:restored" {
		t.Errorf("rewind did %q", restored)
	}
	for f, content := range files {
		expectFile(t, ws, f, []byte(content), 0o644)
	}
}
