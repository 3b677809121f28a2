// Package tinyfs gives a test a small file system of its own to fill up:
// a tmpfs of a chosen size mounted on a temporary directory and unmounted
// when the test ends. The disk-full tests run a real store on it.
//
// Mounting needs Linux and the right to mount (root, CAP_SYS_ADMIN);
// where it is not allowed, Mount returns the reason and the test falls
// back to a store that fails like a full disk (session/storetest.Faulty)
// or says it skips. Fill leaves a given number of bytes free.
package tinyfs

import (
	"os"
	"path/filepath"
	"testing"
)

// Fill writes a file into dir, a tmpfs of Mount, that leaves about free
// bytes of it free, and returns the file's path: removing it gives the
// room back.
func Fill(t testing.TB, dir string, free int64) string {
	t.Helper()
	avail, err := Free(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for left := avail - free; left > 0; left -= int64(len(chunk)) {
		n := min(int64(len(chunk)), left)
		if _, err := f.Write(chunk[:n]); err != nil {
			t.Fatalf("tinyfs: fill %s: %v", dir, err)
		}
	}
	if now, err := Free(dir); err != nil || now > free+64<<10 {
		t.Fatalf("tinyfs: %s has %d bytes free after the fill, want about %d (%v)", dir, now, free, err)
	}
	return path
}
