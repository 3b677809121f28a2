package session

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// One run per session: before a run starts in a session, its process
// claims the session in the store (Store.Claim) and releases it when the
// run has ended (Store.Release). The store is where the claim lives, not
// the process's memory, so that two processes on one database (two `run
// --session`, or a run and a server) cannot run one session at once.

// ErrRunning is the error (errors.Is) of a refused claim: the session, or
// a session of its lineage, is running. The error itself is a
// *RunningError, which says where.
var ErrRunning = errors.New("session is already running")

// Owner is the process that holds a claim.
type Owner struct {
	Instance string    // the store instance that holds it ("" for a store private to its process)
	PID      int       // the process id, as that process saw it
	Host     string    // its host name
	Since    time.Time // when the claim was taken
}

// RunningError is a refused claim.
type RunningError struct {
	SessionID string // the session a run was asked for
	// Claimed is the session whose claim is in the way: SessionID itself,
	// or an ancestor or a descendant of it, which a run holds.
	Claimed string
	Owner   Owner
}

func (e *RunningError) Error() string {
	where := fmt.Sprintf("in process %d on host %s", e.Owner.PID, e.Owner.Host)
	if e.Claimed != "" && e.Claimed != e.SessionID {
		return fmt.Sprintf("session %s is already running (session %s of its tree runs %s)", e.SessionID, e.Claimed, where)
	}
	return fmt.Sprintf("session %s is already running (%s)", e.SessionID, where)
}

// Is makes errors.Is(err, ErrRunning) true.
func (e *RunningError) Is(target error) bool { return target == ErrRunning }

var (
	hostOnce sync.Once
	hostName string
)

// ThisProcess returns the Owner that describes the calling process (no
// instance, no time).
func ThisProcess() Owner {
	hostOnce.Do(func() {
		hostName, _ = os.Hostname()
	})
	return Owner{PID: os.Getpid(), Host: hostName}
}
