//go:build unix

package bounded

import (
	"os"
	"syscall"
)

// openNoDelay opens path for reading without waiting: opening a named
// pipe for reading otherwise blocks until a writer opens it. Regular files
// ignore the flag.
func openNoDelay(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
