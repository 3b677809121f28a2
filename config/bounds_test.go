package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// aliasBomb is the "billion laughs" shape of the finding: nine lines under
// an x- key, each a list of nine aliases to the line before (9^9 leaves,
// 430 bytes), used by a free-form value (tool_args) that the loader walks
// with every alias expanded.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("x-bomb:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	prev := "a"
	for _, c := range "bcdefghi" {
		fmt.Fprintf(&b, "  %c: &%c [%s]\n", c, c, strings.TrimSuffix(strings.Repeat("*"+prev+", ", 9), ", "))
		prev = string(c)
	}
	b.WriteString("agents:\n  w:\n    model: {type: test, tool_args: {t: {k: *i}}}\n")
	return b.String()
}

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadErr loads path, which must be refused, and returns the message.
func loadErr(t *testing.T, path string) string {
	t.Helper()
	m, err := Load(path)
	if err == nil {
		t.Fatalf("%s loaded: %+v", path, m)
	}
	return err.Error()
}

// A manifest of nested aliases is refused at the line where the aliases
// pass the bound, before anything expands them; so is one that brings the
// bomb in through INHERIT, at the line of the inherited file.
func TestYAMLAliasBomb(t *testing.T) {
	const want = ":7: too many YAML alias expansions (more than 100000 nodes reached through aliases)"
	dir := t.TempDir()
	if got := loadErr(t, writeFile(t, dir, "bomb.yaml", aliasBomb())); got != "bomb.yaml"+want && got != filepath.Join(dir, "bomb.yaml")+want {
		t.Errorf("manifest:\n got %s\nwant bomb.yaml%s", got, want)
	}
	base := writeFile(t, dir, "base.yaml", aliasBomb())
	child := writeFile(t, dir, "child.yaml", "INHERIT: base.yaml\nagents:\n  v: {model: test}\n")
	if got := loadErr(t, child); got != base+want {
		t.Errorf("through INHERIT:\n got %s\nwant %s%s", got, base, want)
	}
}

// An alias inside the node it names (yaml.v3 builds the cycle) made the
// loader recurse without end (4 GB in a minute); it is refused at its line.
func TestYAMLAliasCycle(t *testing.T) {
	got := parseErr(t, "agents:\n  w:\n    model: {type: test, tool_args: &x {t: {k: *x}}}\n")
	diffLines(t, got, []string{"agentpool.yaml:3: YAML alias *x refers to a node that contains it (the value would be infinite)"})
}

// Nesting is bounded, aliases followed: a free-form value 150 levels deep
// is refused at the line of the node past the bound.
func TestYAMLNestingDepth(t *testing.T) {
	deep := "agents:\n  w:\n    model:\n      type: test\n      tool_args:\n        t:\n          k: " +
		strings.Repeat("[", 150) + strings.Repeat("]", 150) + "\n"
	diffLines(t, parseErr(t, deep), []string{"agentpool.yaml:7: YAML nested too deeply (more than 100 levels, aliases followed)"})
	// 90 levels in all load.
	mustParse(t, "agents:\n  w:\n    model:\n      type: test\n      tool_args:\n        t:\n          k: "+strings.Repeat("[", 84)+strings.Repeat("]", 84)+"\n")
}

// Nodes are bounded over the manifest and the files it inherits together:
// two files of 130,000 nodes each load on their own, not together.
func TestYAMLNodeCount(t *testing.T) {
	list := "[" + strings.Repeat("0,", 130_000) + "0]"
	dir := t.TempDir()
	base := writeFile(t, dir, "base.yaml", "x-big: "+list+"\nagents:\n  w: {model: test}\n")
	if _, err := Load(base); err != nil {
		t.Fatal(err)
	}
	child := writeFile(t, dir, "child.yaml", "INHERIT: base.yaml\n\nx-more: "+list+"\n")
	if got, want := loadErr(t, child), base+":1: too many YAML nodes (more than 250000, aliases expanded)"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// A manifest, an INHERIT file and a prompt file over 1 MiB are refused
// without being read, naming the file, the entry that names it and the
// bound.
func TestHugeManifestFile(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 200<<20); err != nil { // sparse: no disk spent
		t.Fatal(err)
	}
	if got, want := loadErr(t, huge), huge+": file is 209715200 bytes, more than the limit of 1048576 bytes per file"; got != want {
		t.Errorf("manifest:\n got %s\nwant %s", got, want)
	}
	child := writeFile(t, dir, "child.yaml", "agents:\n  w: {model: test}\nINHERIT: huge.yaml\n")
	if got, want := loadErr(t, child), ":3: INHERIT: cannot read huge.yaml: file is 209715200 bytes, more than the limit of 1048576 bytes per file"; !strings.HasSuffix(got, want) {
		t.Errorf("INHERIT:\n got %s\nwant one ending in %s", got, want)
	}
	prompt := writeFile(t, dir, "prompt.yaml", "agents:\n  w:\n    model: test\n    system_prompt: [{type: file, path: huge.yaml}]\n")
	if got, want := loadErr(t, prompt), ":4: agents.w.system_prompt[0].path: cannot read prompt file huge.yaml: file is 209715200 bytes"; !strings.Contains(got, want) {
		t.Errorf("prompt file:\n got %s\nwant one holding %s", got, want)
	}
	if _, err := Parse("big.yaml", make([]byte, 1<<20+1)); err == nil || err.Error() != "big.yaml: file is 1048577 bytes, more than the limit of 1048576 bytes per file" {
		t.Errorf("Parse of 1 MiB and a byte: %v", err)
	}
}

// A named pipe given as the manifest, or named by INHERIT, is refused at
// once: opening it used to wait for a writer forever.
func TestManifestNamedPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes:", err)
	}
	if _, err := Load(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
		t.Errorf("manifest: %v", err)
	}
	child := writeFile(t, dir, "child.yaml", "INHERIT: pipe.yaml\nagents:\n  w: {model: test}\n")
	if got, want := loadErr(t, child), "child.yaml:1: INHERIT: cannot read pipe.yaml: not a regular file (a named pipe)"; !strings.HasSuffix(got, want) {
		t.Errorf("INHERIT:\n got %s\nwant one ending in %s", got, want)
	}
}

// INHERIT lists that repeat a file at every level multiply: eight levels
// of ten entries read one file 10^8 times. A manifest reads at most 64
// files; the entry past that is refused in the file that names it, once.
func TestInheritFanOut(t *testing.T) {
	dir := t.TempDir()
	for i := range 8 {
		next := fmt.Sprintf("f%d.yaml", i+1)
		writeFile(t, dir, fmt.Sprintf("f%d.yaml", i), "INHERIT: ["+strings.TrimSuffix(strings.Repeat(next+", ", 10), ", ")+"]\n")
	}
	writeFile(t, dir, "f8.yaml", "agents:\n  w: {model: test}\n")
	got := loadErr(t, filepath.Join(dir, "f0.yaml"))
	if want := filepath.Join(dir, "f7.yaml") + ":1: INHERIT[1]: cannot read f8.yaml: too many files for one load (more than 64)"; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// An MCP configuration file is JSON read within the same bounds.
func TestMCPConfigBounds(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "deep.json", `{"mcpServers": {"s": {"command": "x", "args": `+strings.Repeat("[", 120)+strings.Repeat("]", 120)+"}}}")
	m := writeFile(t, dir, "pool.yaml", "agents:\n  w: {model: test}\nmcp_servers:\n  - {config: deep.json}\n")
	if got, want := loadErr(t, m), "pool.yaml:4: mcp_servers[0].config: MCP configuration deep.json:1: JSON nested too deeply (more than 100 levels)"; !strings.HasSuffix(got, want) {
		t.Errorf("got %s\nwant one ending in %s", got, want)
	}
}

// Every manifest that loaded before still loads within the bounds.
func TestBoundsKeepRealManifests(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/*.yaml", "testdata/agentpool/*.yaml", "../examples/*.yaml", "../examples/*/agentpool.yaml", "../docs/spec/examples/*.yaml"} {
		found, _ := filepath.Glob(pattern)
		files = append(files, found...)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d manifests", len(files))
	}
	for _, f := range files {
		_, err := Load(f)
		var ce *Error
		if errors.As(err, &ce) && strings.Contains(err.Error(), "more than") && strings.Contains(err.Error(), "YAML") {
			t.Errorf("%s: a bound refused it: %v", f, err)
		}
	}
}
