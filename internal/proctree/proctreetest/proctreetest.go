// Package proctreetest is the TestMain of the packages that start process
// trees: the test process is a subreaper, as the CLI is, and no goroutine
// outlives the tests. Its waits (WaitExit, WaitFile) block on the
// kernel's notice (a pidfd, inotify), never in a loop of sleeps; their
// bound only fails a test that would hang. They need Linux.
package proctreetest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/agentpool/agentpool/internal/proctree"
	"go.uber.org/goleak"
)

// VerifyTestMain runs the tests of m with the test process a subreaper
// (proctree.ReapTrees: the tests' own children keep their exit status),
// releases it, checks for leaked goroutines (goleak) and exits.
func VerifyTestMain(m *testing.M) {
	release, err := proctree.BecomeSubreaper(proctree.ReapTrees)
	if err != nil && !errors.Is(err, errors.ErrUnsupported) {
		fmt.Fprintln(os.Stderr, "proctreetest:", err)
		os.Exit(1)
	}
	code := m.Run()
	release()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
