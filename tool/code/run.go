package code

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
)

// Bounds of one program run.
const (
	maxFileSize = 4 << 20 // bytes of a file the tools read
	maxOutput   = 8 << 20 // bytes kept of a program's stdout, and of its stderr
	runTimeout  = 60 * time.Second
)

// errOutputTooLarge is a program's output beyond maxOutput.
var errOutputTooLarge = errors.New("its output exceeded the limit")

// capped keeps the first limit bytes written to it and notes the rest.
type capped struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - c.buf.Len(); len(p) > room {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

// ran is how a program ran.
type ran struct {
	stdout, stderr []byte
	code           int // exit code; -1 when it did not exit by itself
}

// runProgram runs bin with args in dir, stdin on its standard input, as a
// process tree killed when ctx ends or at runTimeout. A program that
// could not start, was killed, or wrote more than maxOutput is an error;
// a non-zero exit is not (see ran.code).
func runProgram(ctx context.Context, dir, bin string, args []string, stdin []byte) (ran, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	out, errb := &capped{limit: maxOutput}, &capped{limit: maxOutput}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = out, errb
	tree := proctree.New(cmd)
	if err := tree.Start(); err != nil {
		return ran{code: -1}, err
	}
	exited := make(chan struct{})
	watched := make(chan bool, 1)
	go func() {
		select {
		case <-exited:
			watched <- false
		case <-ctx.Done():
			tree.Kill()
			watched <- true
		}
	}()
	werr := tree.Wait()
	close(exited)
	killed := <-watched
	endErr := tree.End() // what the program left running dies with it
	r := ran{stdout: out.buf.Bytes(), stderr: errb.buf.Bytes(), code: -1}
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		r.code = cmd.ProcessState.ExitCode()
	}
	switch {
	case killed && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return r, fmt.Errorf("it was killed after %s", runTimeout)
	case killed:
		return r, ctx.Err()
	case out.over || errb.over:
		return r, errOutputTooLarge
	case r.code < 0:
		return r, fmt.Errorf("it ended abnormally: %v", werr)
	case endErr != nil:
		return r, fmt.Errorf("processes it started could not be ended: %w", endErr)
	}
	return r, nil
}
