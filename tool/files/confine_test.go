package files

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/tool/workspace"
)

func TestConfinement(t *testing.T) {
	e := newEnv(t)
	secret := e.file(filepath.Join(e.out, "secret.txt"), "needle secret\n")
	e.file(filepath.Join(e.out, "sub/deep.txt"), "needle deep\n")
	e.symlink(secret, "leak.txt")                            // a file symlink out
	e.symlink(e.out, "outdir")                               // a dir symlink out
	e.symlink(filepath.Join(e.out, "created.txt"), "dangle") // dangling, pointing out
	e.file("inside.txt", "needle inside\n")

	want := []string{"outside the workspace " + e.root}
	cases := []struct {
		tool string
		args m
	}{
		{Read, m{"file_path": "../outside/secret.txt"}},
		{Read, m{"file_path": "/etc/passwd"}},
		{Read, m{"file_path": "leak.txt"}},
		{Read, m{"file_path": "outdir/secret.txt"}},
		{Write, m{"file_path": "../x.txt", "content": "x"}},
		{Write, m{"file_path": "/etc/passwd", "content": "x"}},
		{Write, m{"file_path": "leak.txt", "content": "x"}},
		{Write, m{"file_path": "outdir/new.txt", "content": "x"}},
		{Write, m{"file_path": "dangle", "content": "x"}},
		{Edit, m{"file_path": "leak.txt", "old_string": "needle", "new_string": "pin"}},
		{Edit, m{"file_path": "../outside/secret.txt", "old_string": "needle", "new_string": "pin"}},
		{Edit, m{"file_path": "dangle", "old_string": "", "new_string": "x"}},
		{LS, m{"path": ".."}},
		{LS, m{"path": "outdir"}},
		{LS, m{"path": "/etc"}},
		{Glob, m{"pattern": "*", "path": "outdir"}},
		{Glob, m{"pattern": "../outside/*"}},
		{Glob, m{"pattern": "/etc/*"}},
		{Grep, m{"pattern": "needle", "path": "outdir"}},
		{Grep, m{"pattern": "needle", "path": "leak.txt"}},
		{Grep, m{"pattern": "root", "path": "/etc/passwd"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.tool, c.args), func(t *testing.T) {
			e.fails(e.call(c.tool, "s1", c.args), want...)
		})
	}
	if _, err := os.Stat(filepath.Join(e.out, "created.txt")); !os.IsNotExist(err) {
		t.Fatal("a write through the dangling symlink created its target outside")
	}
	if e.content(secret) != "needle secret\n" {
		t.Fatal("the outside file was changed")
	}

	// The search tools do not list what lies outside.
	res := e.ok(e.call(Glob, "s1", m{"pattern": "**/*"}))
	if res.Content != filepath.Join(e.root, "inside.txt")+"\n" {
		t.Fatalf("glob %q", res.Content)
	}
	res = e.ok(e.call(Grep, "s1", m{"pattern": "needle", "output_mode": "content"}))
	if res.Content != filepath.Join(e.root, "inside.txt")+":1:needle inside\n" {
		t.Fatalf("grep %q", res.Content)
	}
	res = e.ok(e.call(LS, "s1", m{}))
	if res.Content != "- "+e.root+"/\n  - inside.txt\n" {
		t.Fatalf("ls %q", res.Content)
	}
}

func TestSymlinksInside(t *testing.T) {
	e := newEnv(t)
	e.file("real/a.txt", "needle a\n")
	e.symlink(filepath.Join(e.root, "real"), "linkdir")
	e.symlink(filepath.Join(e.root, "real/a.txt"), "link.txt")
	e.touch("real/a.txt", 0)

	// Read and Edit follow a link that stays inside.
	res := e.ok(e.call(Read, "s1", m{"file_path": "linkdir/a.txt"}))
	if res.Content != "     1\tneedle a\n" || res.Locations[0].Path != filepath.Join(e.root, "real/a.txt") {
		t.Fatalf("%q %+v", res.Content, res.Locations)
	}
	e.ok(e.call(Edit, "s1", m{"file_path": "link.txt", "old_string": "needle", "new_string": "pin"}))
	if e.content("real/a.txt") != "pin a\n" {
		t.Fatal("edit through the link failed")
	}
	if fi, err := os.Lstat(filepath.Join(e.root, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the edit replaced the symlink")
	}
	// Searches list a file link but do not enter a directory link.
	e.touch("real/a.txt", 0)
	res = e.ok(e.call(Glob, "s1", m{"pattern": "**/*.txt"}))
	if res.Content != filepath.Join(e.root, "link.txt")+"\n"+filepath.Join(e.root, "real/a.txt")+"\n" {
		t.Fatalf("glob %q", res.Content)
	}
	res = e.ok(e.call(LS, "s1", m{}))
	if res.Content != "- "+e.root+"/\n  - link.txt\n  - linkdir/\n  - real/\n    - a.txt\n" {
		t.Fatalf("ls %q", res.Content)
	}
}

func TestWorkspaceFromContext(t *testing.T) {
	e := newEnv(t)
	other, err := workspace.New(e.out)
	if err != nil {
		t.Fatal(err)
	}
	e.file(filepath.Join(e.out, "o.txt"), "other root\n")
	ctx := workspace.WithWorkspace(context.Background(), other)
	res := e.callRaw(ctx, Read, "s1", []byte(`{"file_path":"o.txt"}`))
	if res.IsError || res.Content != "     1\tother root\n" {
		t.Fatalf("%+v", res)
	}
	res = e.callRaw(ctx, Read, "s1", []byte(`{"file_path":"`+filepath.Join(e.root, "x")+`"}`))
	e.fails(res, "outside the workspace "+e.out)

	// A toolset without a workspace refuses politely.
	var none *Toolset = New(nil)
	r, err := none.Tools()[0].Call(context.Background(), callOf(Read, `{"file_path":"a"}`))
	if err != nil || !r.IsError || !strings.Contains(r.Content, "No workspace") {
		t.Fatalf("%+v %v", r, err)
	}
}
