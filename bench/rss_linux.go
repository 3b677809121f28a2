//go:build linux

package bench

import (
	"os"
	"strconv"
	"strings"
)

// RSSNow returns the resident set size of the process in bytes (from
// /proc/self/statm), 0 when it cannot be read. Unlike the Go heap it
// counts the SQLite driver's page cache and buffers, which live outside
// the Go heap.
func RSSNow() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}
