//go:build !unix

package bounded

import "os"

// openNoDelay opens path for reading (no named pipe blocks an open here).
func openNoDelay(path string) (*os.File, error) { return os.Open(path) }
