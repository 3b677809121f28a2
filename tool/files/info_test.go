package files

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentpool/agentpool/tool"
)

func TestToolsInfo(t *testing.T) {
	e := newEnv(t)
	want := []struct {
		name, kind string
		props      []string
		required   []string
	}{
		{Read, tool.KindRead, []string{"file_path", "limit", "offset"}, []string{"file_path"}},
		{Write, tool.KindEdit, []string{"content", "file_path"}, []string{"file_path", "content"}},
		{Edit, tool.KindEdit, []string{"file_path", "new_string", "old_string", "replace_all"}, []string{"file_path", "old_string", "new_string"}},
		{Glob, tool.KindSearch, []string{"path", "pattern"}, []string{"pattern"}},
		{Grep, tool.KindSearch, []string{"-A", "-B", "-C", "-i", "-n", "glob", "head_limit", "output_mode", "path", "pattern", "type"}, []string{"pattern"}},
		{LS, tool.KindRead, []string{"ignore", "path"}, nil},
	}
	tools := e.ts.Tools()
	if len(tools) != len(want) {
		t.Fatalf("%d tools", len(tools))
	}
	for i, w := range want {
		info := tools[i].Info()
		if info.Name != w.name || info.Kind != w.kind || info.Description == "" {
			t.Errorf("tool %d: %s %s", i, info.Name, info.Kind)
		}
		var schema struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if err := json.Unmarshal(info.Parameters, &schema); err != nil {
			t.Fatal(err)
		}
		var props []string
		for p := range schema.Properties {
			props = append(props, p)
		}
		if !sameSet(props, w.props) || !reflect.DeepEqual(schema.Required, w.required) {
			t.Errorf("%s: properties %v required %v", w.name, props, schema.Required)
		}
		if _, ok := tools[i].(tool.Locator); !ok {
			t.Errorf("%s is not a Locator", w.name)
		}
		if _, ok := tools[i].(tool.Titler); !ok {
			t.Errorf("%s is not a Titler", w.name)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, s := range a {
		seen[s] = true
	}
	for _, s := range b {
		if !seen[s] {
			return false
		}
	}
	return true
}

func TestTitlesAndLocations(t *testing.T) {
	e := newEnv(t)
	e.file("src/main.go", "")
	main := filepath.Join(e.root, "src/main.go")
	cases := []struct {
		tool, args, title string
		locs              []tool.Location
	}{
		{Read, `{"file_path":"src/main.go"}`, "Read src/main.go", []tool.Location{{Path: main}}},
		{Read, `{"file_path":"` + main + `","offset":10}`, "Read src/main.go", []tool.Location{{Path: main, Line: 10}}},
		{Read, `{"file_path":"/etc/passwd"}`, "Read /etc/passwd", nil},
		{Write, `{"file_path":"src/new.go","content":""}`, "Write src/new.go", []tool.Location{{Path: filepath.Join(e.root, "src/new.go")}}},
		{Edit, `{"file_path":"README.md","old_string":"a","new_string":"b"}`, "Edit README.md", []tool.Location{{Path: filepath.Join(e.root, "README.md")}}},
		{Glob, `{"pattern":"**/*.go"}`, `Glob "**/*.go"`, []tool.Location{{Path: e.root}}},
		{Grep, `{"pattern":"foo","path":"src"}`, `Grep "foo" in src`, []tool.Location{{Path: filepath.Join(e.root, "src")}}},
		{LS, `{}`, "LS .", []tool.Location{{Path: e.root}}},
		{LS, `{"path":"src"}`, "LS src", []tool.Location{{Path: filepath.Join(e.root, "src")}}},
		{Read, `{"file_path":`, "Read", nil},
	}
	for _, c := range cases {
		tl := e.tool(c.tool)
		call := callOf(c.tool, c.args)
		if got := tool.Title(tl, call); got != c.title {
			t.Errorf("%s %s: title %q, want %q", c.tool, c.args, got, c.title)
		}
		if got := tool.Locations(tl, call); !reflect.DeepEqual(got, c.locs) {
			t.Errorf("%s %s: locations %+v, want %+v", c.tool, c.args, got, c.locs)
		}
	}
}
