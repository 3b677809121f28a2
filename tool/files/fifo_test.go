//go:build unix

package files

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
)

func TestSpecialFilesDoNotBlock(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(e.root, "pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	e.file("a.txt", "hello\n")
	e.fails(e.call(Read, "s1", m{"file_path": "pipe"}), fifo+" is not a regular file")
	e.fails(e.call(Write, "s1", m{"file_path": "pipe", "content": "x"}), fifo+" is not a regular file")
	e.fails(e.call(Grep, "s1", m{"pattern": "x", "path": "pipe"}), fifo+" is not a regular file")
	res := e.ok(e.call(Grep, "s1", m{"pattern": "hello|x"}))
	if res.Content != "Found 1 file\n"+filepath.Join(e.root, "a.txt")+"\n" {
		t.Fatalf("grep %q", res.Content)
	}
	res = e.ok(e.call(Glob, "s1", m{"pattern": "*"}))
	if res.Content != filepath.Join(e.root, "a.txt")+"\n" {
		t.Fatalf("glob %q", res.Content)
	}
}

func TestCancelledSearch(t *testing.T) {
	e := newEnv(t)
	e.file("a.txt", "hello\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := e.callRaw(ctx, Grep, "s1", []byte(`{"pattern":"hello"}`))
	e.fails(res, "Grep failed: context canceled")
}
