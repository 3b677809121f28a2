package durable

import (
	"context"
	"os"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session/memory"
)

// Histories recorded by earlier builds replay on this one: a workflow a
// worker of an older build started goes on on a newer worker.

// envRecordHistory, when set, is the file TestRecordTeamHistory writes
// (JSON): the history of a parallel team's workflow as this build makes
// it, of envRecordMembers members (default 3) in a window of
// envRecordWindow (default 1: one at a time). testdata/team-v0.json was
// recorded by the build before continue-as-new (main 5eeded1), 3 members
// in a window of 1; testdata/team-v1.json by the build before batched
// creates (c28392a), 8 members in a window of 4; team-v2.json by the
// build before members named by their index (edae043), team-v3.json
// after it, 8 members in a window of 4 each.
const (
	envRecordHistory = "AGENTPOOL_RECORD_HISTORY"
	envRecordMembers = "AGENTPOOL_RECORD_MEMBERS"
	envRecordWindow  = "AGENTPOOL_RECORD_WINDOW"
)

// TestRecordTeamHistory records a team workflow's history for the replay
// tests (by hand: AGENTPOOL_RECORD_HISTORY=file).
func TestRecordTeamHistory(t *testing.T) {
	file := os.Getenv(envRecordHistory)
	if file == "" {
		t.Skipf("%s is not set", envRecordHistory)
	}
	addr := startDevServer(t)
	api := newFakeAPI(t, 0)
	st := openTestDB(t, testDB(t))
	p, err := teamPool(api.URL+"/v1", "key", st, envInt(t, envRecordMembers, 3))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialTest(t, addr)
	w := worker.New(c, testQueue, worker.Options{})
	e := engineFor(p)
	e.TaskQueue = testQueue
	e.MaxInFlight = envInt(t, envRecordWindow, 1) // members wait to start: a run past its bounds would drain
	e.Register(w)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node, _ := p.Node("crew")
	root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "Answer.", TaskQueue: testQueue}, event.SinkFunc(func(event.Event) {}))
	if err != nil || out.StopReason != event.StopCompleted {
		t.Fatalf("team: %+v, %v", out, err)
	}
	var h historypb.History
	it := c.GetWorkflowHistory(ctx, root, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	raw, err := protojson.MarshalOptions{Indent: " "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events of team workflow %s", file, len(h.Events), root)
}

// A parallel team's workflow started by the build before continue-as-new
// (no version marker in its history) replays on this build unchanged.
func TestReplayTeamHistoryBeforeContinueAsNew(t *testing.T) {
	// Past its bounds at once: without the version check the replay
	// would drain and continue as new where the history went on.
	replayTeam(t, "testdata/team-v0.json", 3, 1, 5)
}

// A parallel team's workflow started by the build before batched creates
// (each member's Create a local activity of its own, one at a time under
// the write lock) replays on this build unchanged: 8 members in a window
// of 4, whose creations overlapped.
func TestReplayTeamHistoryBeforeBatchedCreates(t *testing.T) {
	replayTeam(t, "testdata/team-v1.json", 8, 4, 0)
}

// A history made with batched creates before members were named by
// their index replays on this build (the batches are the same when the
// history is replayed, and the members' ids those of the order they were
// made in).
func TestReplayTeamHistoryBatchedCreates(t *testing.T) {
	replayTeam(t, "testdata/team-v2.json", 8, 4, 0)
}

// A history this build made, its members named by their index
// (versionMemberNames), replays on it.
func TestReplayTeamHistoryMemberNames(t *testing.T) {
	replayTeam(t, "testdata/team-v3.json", 8, 4, 0)
}

// replayTeam replays the team workflow's history in file, recorded by
// TestRecordTeamHistory with members members in a window of window, on
// this build's engine, whose team continues as new past continueAfter
// events (0: the default).
func replayTeam(t *testing.T, file string, members, window, continueAfter int) {
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var h historypb.History
	if err := protojson.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	p, err := teamPool("http://127.0.0.1:9/v1", "key", memory.New(), members)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	e := engineFor(p)
	e.TaskQueue = testQueue
	e.MaxInFlight = window
	e.ContinueAfterEvents = continueAfter
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(e.Session, workflow.RegisterOptions{Name: WorkflowName})
	if err := r.ReplayWorkflowHistory(quietLogger{}, &h); err != nil {
		t.Fatal(err)
	}
}
