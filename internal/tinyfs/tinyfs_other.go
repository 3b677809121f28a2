//go:build !linux

package tinyfs

import (
	"errors"
	"testing"
)

// errUnsupported is Mount's error where it cannot mount.
var errUnsupported = errors.New("tinyfs: tmpfs mounts need Linux")

// Mount cannot mount here: see the package documentation.
func Mount(t testing.TB, size int64) (string, error) { return "", errUnsupported }

// Free is unknown here.
func Free(dir string) (int64, error) { return 0, errUnsupported }
