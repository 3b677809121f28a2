package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// INHERIT concatenates lists without repeating an item of the base that
// decodes to an equal value (key order of mappings aside; 1, 1.0 and "1"
// differ), and keeps repeats within the inheriting list.
func TestInheritListMergeEquality(t *testing.T) {
	node := func(src string) *yaml.Node {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Content[0]
	}
	merged := mergeNodes(
		node(`[1, "1", {a: 1, b: [x, y]}, shared, null]`),
		node(`[1, 1.0, "1", {b: [x, y], a: 1}, {b: [y, x], a: 1}, shared, ~, new, new, 0x1]`),
	)
	var got []any
	if err := merged.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := `[]interface {}{1, "1", map[string]interface {}{"a":1, "b":[]interface {}{"x", "y"}}, "shared", interface {}(nil), 1, map[string]interface {}{"a":1, "b":[]interface {}{"y", "x"}}, "new", "new"}`
	if s := fmt.Sprintf("%#v", got); s != want {
		t.Errorf("merged list %s\nwant %s", s, want)
	}
	if _, float := got[5].(float64); !float {
		t.Errorf("item 5 is %T, want the float 1.0 of the inheriting list", got[5])
	}
}

// BenchmarkInheritListMerge merges two lists of 2,000 distinct items each
// through INHERIT (48 KB of files). Comparing every pair decoded 4,000,000
// items (seconds per load, and a 1 MiB pair would take hours).
func BenchmarkInheritListMerge(b *testing.B) {
	items := func(from int) string {
		var s strings.Builder
		for i := range 2000 {
			fmt.Fprintf(&s, "{id: %d, tags: [a, b]}, ", from+i)
		}
		return "[" + strings.TrimSuffix(s.String(), ", ") + "]"
	}
	dir := b.TempDir()
	writeFileB(b, dir, "base.yaml", "agents:\n  w: {model: test}\nx-list: "+items(0)+"\n")
	child := writeFileB(b, dir, "child.yaml", "INHERIT: base.yaml\nx-list: "+items(2000)+"\n")
	for b.Loop() {
		if _, err := Load(child); err != nil {
			b.Fatal(err)
		}
	}
}

func writeFileB(b *testing.B, dir, name, text string) string {
	b.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}
