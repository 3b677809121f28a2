package acpagent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/external/acpagent"
	"github.com/agentpool/agentpool/internal/opencodetest"
)

// opencodeNode is the real `opencode acp` (package opencodetest: offline,
// on a fake model) as a member called name.
func opencodeNode(t *testing.T, name string, model *opencodetest.Model, extraConfig string) *acpagent.Node {
	t.Helper()
	return newNode(t, acpagentConfig(opencodetest.NewSetup(t, model, extraConfig), name))
}

// acpagentConfig is the Config of a member named name that runs oc.
func acpagentConfig(oc opencodetest.Setup, name string) acpagent.Config {
	return acpagent.Config{
		Name: name, Command: oc.Bin, Args: []string{"acp"}, Dir: oc.Project, Env: oc.Env,
		AllowFileOperations: true,
	}
}

// The real opencode answers a delegation, streamed: its message arrives
// as several text deltas of one part and is the child's result.
func TestOpencodeAnswersStreamed(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	model := opencodetest.NewModel(t, "The answer is forty-two, said the fake model.")
	oc := opencodeNode(t, "opencode", model, "")
	parent := parentNode{name: "parent", child: oc, times: 1}
	p, _ := testPool(t, nil, oc, parent)
	res, evs := run(t, context.Background(), p, "parent", "What is the answer?", nil)
	if res.Result.StopReason != event.StopCompleted {
		t.Fatalf("parent %+v", res.Result)
	}
	var end event.SpawnSessionEnd
	deltas := 0
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionEnd:
			end = v
		case event.Subagent:
			if d, ok := v.Event.(event.PartDelta); ok && d.Delta.PartDeltaKind == event.PartText {
				deltas++
			}
		}
	}
	if end.StopReason != event.StopCompleted || end.LastAssistantMessage != "The answer is forty-two, said the fake model." {
		t.Fatalf("child end %+v", end)
	}
	if deltas < 2 {
		t.Errorf("%d text deltas: the answer was not streamed", deltas)
	}
}

// Cancelling the run while opencode waits for its model sends
// session/cancel: opencode answers cancelled (it is not killed), the
// child ends aborted, and the process ends with the run.
func TestOpencodeCancelledMidRun(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	model := opencodetest.NewModel(t, "never sent")
	cfg := acpagentConfig(opencodetest.NewSetup(t, model, ""), "opencode")
	// opencode took over 5 s (the default grace) to answer session/cancel
	// under a load average of 21 on the 2-core test machine: the test
	// checks that it answers, not how fast a loaded machine lets it.
	cfg.CancelGrace = 30 * time.Second
	oc := newNode(t, cfg)
	parent := parentNode{name: "parent", child: oc, times: 1}
	p, _ := testPool(t, nil, oc, parent)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-model.Waiting:
			cancel()
		case <-ctx.Done():
		}
	}()
	res, evs := run(t, ctx, p, "parent", "Please wait forever.", nil)
	var end event.SpawnSessionEnd
	for _, e := range evs {
		if v, ok := e.(event.SpawnSessionEnd); ok {
			end = v
		}
	}
	if end.StopReason != event.StopAborted || strings.Contains(end.Error, "killed") {
		t.Fatalf("child end %+v (parent %+v)", end, res.Result)
	}
}
