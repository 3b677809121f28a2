package code

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/workspace"
)

// newTools returns the code tools of a temporary workspace, by name.
func newTools(t *testing.T) (string, map[string]tool.Tool) {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]tool.Tool{}
	for _, tl := range New(ws).Tools() {
		m[tl.Info().Name] = tl
	}
	return ws.Root(), m
}

func call(t *testing.T, tl tool.Tool, args any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Run(context.Background(), tl, tool.Call{ID: "c1", Name: tl.Info().Name, Args: raw})
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o640); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const messyGo = "package main\nfunc main(){\nx:=1\n  println( x )\n}\n"
const tidyGo = "package main\n\nfunc main() {\n\tx := 1\n\tprintln(x)\n}\n"

func needGofmt(t *testing.T) {
	if _, err := exec.LookPath("gofmt"); err != nil {
		t.Skip("gofmt is not installed")
	}
}

func TestFormatCodeRunsGofmt(t *testing.T) {
	needGofmt(t)
	root, tools := newTools(t)
	p := filepath.Join(root, "main.go")
	write(t, p, messyGo)
	res := call(t, tools[FormatCode], formatArgs{Path: "main.go"})
	if res.IsError {
		t.Fatalf("error: %s", res.Content)
	}
	if got := read(t, p); got != tidyGo {
		t.Fatalf("file after format_code:\n%q\nwant\n%q", got, tidyGo)
	}
	if len(res.Diffs) != 1 || res.Diffs[0].NewText != tidyGo || *res.Diffs[0].OldText != messyGo {
		t.Fatalf("diffs = %+v", res.Diffs)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode changed to %v", st.Mode().Perm())
	}
	// Formatting again changes nothing.
	res = call(t, tools[FormatCode], formatArgs{Path: p})
	if res.IsError || !strings.Contains(res.Content, "already formatted") || res.Metadata["changed"] != false {
		t.Fatalf("second run: %+v", res)
	}
}

func TestFormatCodeLeavesABrokenFileAlone(t *testing.T) {
	needGofmt(t)
	root, tools := newTools(t)
	p := filepath.Join(root, "bad.txt")
	const bad = "package main\nfunc main( {\n"
	write(t, p, bad)
	res := call(t, tools[FormatCode], formatArgs{Path: "bad.txt", Language: "go"})
	if !res.IsError || !strings.Contains(res.Content, "gofmt could not format") || !strings.Contains(res.Content, "expected") {
		t.Fatalf("result: %+v", res)
	}
	if read(t, p) != bad {
		t.Fatal("the broken file was changed")
	}
}

func TestFormatCodeStaysInTheWorkspace(t *testing.T) {
	needGofmt(t)
	root, tools := newTools(t)
	outside := filepath.Join(t.TempDir(), "o.go")
	write(t, outside, messyGo)
	if err := os.Symlink(outside, filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{outside, "../o.go", "link.go"} {
		res := call(t, tools[FormatCode], formatArgs{Path: p})
		if !res.IsError {
			t.Fatalf("%s: formatted a file outside the workspace: %s", p, res.Content)
		}
	}
	if read(t, outside) != messyGo {
		t.Fatal("a file outside the workspace was changed")
	}
}

func TestFormatCodeNamesWhatToInstall(t *testing.T) {
	root, tools := newTools(t)
	t.Setenv("PATH", t.TempDir()) // no program is found
	write(t, filepath.Join(root, "a.py"), "x=1\n")
	res := call(t, tools[FormatCode], formatArgs{Path: "a.py"})
	if !res.IsError || !strings.Contains(res.Content, "No formatter for python is installed: install ruff (pip install ruff), or black") {
		t.Fatalf("result: %+v", res)
	}
	res = call(t, tools[FormatCode], formatArgs{Path: "a.xyz"})
	if !res.IsError || !strings.Contains(res.Content, "give language") {
		t.Fatalf("unknown extension: %+v", res)
	}
	res = call(t, tools[ASTGrep], astGrepArgs{Path: "a.py", Rule: map[string]any{"pattern": "x = $A"}})
	if !res.IsError || !strings.Contains(res.Content, "ast-grep is not installed: install it (npm install -g @ast-grep/cli") {
		t.Fatalf("ast_grep without ast-grep: %+v", res)
	}
}

// needASTGrep puts ast-grep on PATH from AGENTPOOL_AST_GREP_DIR when set;
// without ast-grep the test is skipped.
func needASTGrep(t *testing.T) {
	if d := os.Getenv("AGENTPOOL_AST_GREP_DIR"); d != "" {
		t.Setenv("PATH", d+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if _, err := exec.LookPath("ast-grep"); err != nil {
		t.Skip("ast-grep is not installed (npm install @ast-grep/cli; set AGENTPOOL_AST_GREP_DIR to the folder of its binary)")
	}
}

func TestASTGrepFindsAndRewrites(t *testing.T) {
	needASTGrep(t)
	root, tools := newTools(t)
	p := filepath.Join(root, "a.ts")
	const src = "function f(x: number) {\n  console.log(x);\n  return x;\n}\nconsole.log(\"done\");\n"
	write(t, p, src)
	rule := map[string]any{"pattern": "console.log($A)"}
	res := call(t, tools[ASTGrep], astGrepArgs{Path: "a.ts", Rule: rule})
	if res.IsError || !strings.Contains(res.Content, "2 match(es) in a.ts") || !strings.Contains(res.Content, "2:3: console.log(x)") ||
		!strings.Contains(res.Content, "5:1: console.log(\"done\")") {
		t.Fatalf("search: %+v", res)
	}
	if len(res.Locations) != 2 || res.Locations[1].Line != 5 {
		t.Fatalf("locations = %+v", res.Locations)
	}
	// A fix is a dry run unless dry_run is false.
	res = call(t, tools[ASTGrep], astGrepArgs{Path: "a.ts", Rule: rule, Fix: "logger.info($A)"})
	if res.IsError || !strings.Contains(res.Content, "-> logger.info(x)") || read(t, p) != src {
		t.Fatalf("dry run: %+v", res)
	}
	no := false
	res = call(t, tools[ASTGrep], astGrepArgs{Path: "a.ts", Rule: rule, Fix: "logger.info($A)", DryRun: &no})
	want := strings.ReplaceAll(src, "console.log", "logger.info")
	if res.IsError || read(t, p) != want || len(res.Diffs) != 1 {
		t.Fatalf("rewrite: %+v\nfile: %q", res, read(t, p))
	}
	res = call(t, tools[ASTGrep], astGrepArgs{Path: "a.ts", Rule: map[string]any{"pattern": "nothing($A)"}})
	if res.IsError || !strings.Contains(res.Content, "No match in a.ts") {
		t.Fatalf("no match: %+v", res)
	}
	res = call(t, tools[ASTGrep], astGrepArgs{Path: "a.ts", Rule: map[string]any{"bogus": 1}})
	if !res.IsError || !strings.Contains(res.Content, "ast-grep refused the rule") {
		t.Fatalf("bad rule: %+v", res)
	}
}
