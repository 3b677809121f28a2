package tinyfs

import (
	"fmt"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new temporary directory and
// returns the directory; the test's cleanup unmounts it (before the
// temporary directory is removed). The error says why it cannot.
func Mount(t testing.TB, size int64) (string, error) {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return "", fmt.Errorf("tinyfs: mount a tmpfs on %s: %w", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("tinyfs: unmount %s: %v", dir, err)
		}
	})
	return dir, nil
}

// Free returns the bytes free for an unprivileged writer in dir's file
// system.
func Free(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize, nil
}
