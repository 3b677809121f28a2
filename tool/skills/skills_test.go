package skills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/tool"
)

func writeSkill(t *testing.T, dir, folder, text string) {
	t.Helper()
	p := filepath.Join(dir, folder)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "SKILL.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverAndLoad(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	writeSkill(t, first, "pdf", "---\nname: pdf\ndescription: Fills PDF forms.\n---\n# PDF\n\nUse the form fields.\n")
	writeSkill(t, first, "broken", "# no front matter\n")
	writeSkill(t, first, "nameless", "---\ndescription: x\n---\nbody\n")
	writeSkill(t, second, "pdf-copy", "---\nname: pdf\ndescription: Shadowed.\n---\nignored\n")
	writeSkill(t, second, "sql", "\ufeff---\r\nname: sql\r\ndescription: \"Writes SQL: joins first.\"\r\n---\r\nPrefer CTEs.\r\n")
	if err := os.WriteFile(filepath.Join(second, "README.md"), []byte("not a skill"), 0o644); err != nil {
		t.Fatal(err)
	}
	found, errs := Discover([]string{first, filepath.Join(first, "missing"), second})
	if len(found) != 2 || found[0].Name != "pdf" || found[0].Description != "Fills PDF forms." || found[1].Name != "sql" {
		t.Fatalf("found = %+v", found)
	}
	if len(errs) != 2 || !strings.Contains(errs[0].Error()+errs[1].Error(), "no YAML front matter") || !strings.Contains(errs[0].Error()+errs[1].Error(), "has no name") {
		t.Errorf("errs = %v", errs)
	}
	ts := New(found, 0)
	tools := ts.Tools()
	load, list := tools[0], tools[1]
	if info := load.Info(); info.Name != LoadSkill || info.Kind != tool.KindRead || !strings.Contains(info.Description, "- pdf: Fills PDF forms.") {
		t.Errorf("load_skill info = %+v", info)
	}
	ctx := context.Background()
	res := tool.Run(ctx, load, tool.Call{Name: LoadSkill, Args: []byte(`{"skill_name":"sql"}`)})
	if res.IsError || !strings.HasPrefix(res.Content, "# sql\n\nPrefer CTEs.") || !strings.Contains(res.Content, "Skill directory: "+filepath.Join(second, "sql")) {
		t.Errorf("load sql = %+v", res)
	}
	res = tool.Run(ctx, load, tool.Call{Name: LoadSkill, Args: []byte(`{"skill_name":"nope"}`)})
	if !res.IsError || !strings.Contains(res.Content, "available skills: pdf, sql") {
		t.Errorf("load nope = %+v", res)
	}
	if res := tool.Run(ctx, list, tool.Call{Name: ListSkills, Args: []byte(`{}`)}); !strings.Contains(res.Content, "- sql: Writes SQL: joins first.") {
		t.Errorf("list = %+v", res)
	}
	if all := ts.All(); !strings.Contains(all, "<skill_content name=\"pdf\">\n# PDF") || !strings.Contains(all, "Prefer CTEs.") {
		t.Errorf("All = %q", all)
	}
	if got := New(found, 1).Skills(); len(got) != 1 {
		t.Errorf("max 1: %v", got)
	}
	if res := tool.Run(ctx, New(nil, 0).Tools()[1], tool.Call{Args: []byte(`{}`)}); res.Content != "No skills available." {
		t.Errorf("empty list = %+v", res)
	}
}

// A SKILL.md over 1 MiB is left out unread, with an error naming the file
// and the bound, and so is one whose front matter is an alias bomb.
func TestHugeSkillFile(t *testing.T) {
	dir := t.TempDir()
	writeSkill(t, dir, "huge", "")
	huge := filepath.Join(dir, "huge", "SKILL.md")
	if err := os.Truncate(huge, 200<<20); err != nil { // sparse: no disk spent
		t.Fatal(err)
	}
	var bomb strings.Builder
	bomb.WriteString("---\nname: bomb\ndescription: d\nx0: &x0 [l, l, l, l, l, l, l, l, l]\n")
	for i := 1; i < 9; i++ {
		fmt.Fprintf(&bomb, "x%d: &x%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*x%d, ", i-1), 9), ", "))
	}
	bomb.WriteString("---\nbody\n")
	writeSkill(t, dir, "bomb", bomb.String())
	writeSkill(t, dir, "empty", "---\n\n---\nbody\n")
	found, errs := Discover([]string{dir})
	if len(found) != 0 {
		t.Errorf("found %+v", found)
	}
	got := make([]string, len(errs))
	for i, err := range errs {
		got[i] = err.Error()
	}
	want := []string{
		filepath.Join(dir, "bomb", "SKILL.md") + ": line 9: too many YAML alias expansions (more than 100000 nodes reached through aliases)",
		filepath.Join(dir, "empty", "SKILL.md") + ": front matter has no name",
		huge + ": file is 209715200 bytes, more than the limit of 1048576 bytes per file",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
