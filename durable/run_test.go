package durable

import (
	"context"
	"errors"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/agentpool/agentpool/event"
)

// scriptedRun is a workflow run whose Get answers from a script: the
// errors first, then the output.
type scriptedRun struct {
	client.WorkflowRun // nil: any other call is a bug, and panics
	errs               []error
	out                SessionOutput
	gets               int
}

func (r *scriptedRun) Get(_ context.Context, v any) error {
	r.gets++
	if len(r.errs) > 0 {
		err := r.errs[0]
		r.errs = r.errs[1:]
		return err
	}
	*v.(*SessionOutput) = r.out
	return nil
}

// A wait for the result that fails on its way to the server (the long
// poll timed out, the server was unreachable) is waited again: the run
// goes on, and its end is what RunRoot returns.
func TestWaitResultWaitsThroughFailedWaits(t *testing.T) {
	run := &scriptedRun{
		errs: []error{serviceerror.NewDeadlineExceeded("context deadline exceeded"), serviceerror.NewUnavailable("connection refused")},
		out:  SessionOutput{StopReason: event.StopCompleted, Output: "done"},
	}
	var out SessionOutput
	if err := waitResult(context.Background(), run, &out); err != nil || out.Output != "done" || run.gets != 3 {
		t.Fatalf("waitResult = %v, %+v after %d waits; want the run's end after 3", err, out, run.gets)
	}
}

// The run's own end, even a failure, is returned at once; so is a failed
// wait once the call's ctx has ended.
func TestWaitResultReturnsTheEnd(t *testing.T) {
	for _, end := range []error{temporal.NewCanceledError(), errors.New("workflow failed")} {
		run := &scriptedRun{errs: []error{end}}
		var out SessionOutput
		if err := waitResult(context.Background(), run, &out); !errors.Is(err, end) || run.gets != 1 {
			t.Errorf("waitResult = %v after %d waits; want %v after 1", err, run.gets, end)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run := &scriptedRun{errs: []error{serviceerror.NewDeadlineExceeded("context deadline exceeded")}}
	var out SessionOutput
	if err := waitResult(ctx, run, &out); err == nil || run.gets != 1 {
		t.Errorf("waitResult under an ended ctx = %v after %d waits; want the failed wait after 1", err, run.gets)
	}
}
