package shell

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Orphaned grandchildren are reparented to the test process, which
	// reaps them in gone (an init that does not reap would keep them as
	// zombies that signal 0 still reaches).
	becomeSubreaper()
	goleak.VerifyTestMain(m)
}
