package cli

import (
	"context"
	"errors"
	"io"
	"sync"
	"syscall"
)

// errStdoutClosed is the cause of a run cancelled because its standard
// output was closed (`agentpool run ... | head`).
var errStdoutClosed = errors.New("standard output closed")

// exitStdoutClosed is the exit code of such a run: a shell's code for a
// process killed by SIGPIPE, which is what a reader that stops early
// expects.
const exitStdoutClosed = 128 + int(syscall.SIGPIPE)

// pipeWriter is run's standard output. A write that fails because the
// reader went away cancels the run (cause errStdoutClosed) instead of
// letting SIGPIPE kill the process: the run then ends like a cancelled one,
// its session is stored aborted, and the pool closes its MCP servers and
// background shells.
type pipeWriter struct {
	w      io.Writer
	cancel context.CancelCauseFunc
	once   sync.Once
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		p.once.Do(func() { p.cancel(errStdoutClosed) })
	}
	return n, err
}
