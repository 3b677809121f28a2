package durable

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
)

// checkLive checks, while a root run is live (its child's model call cut
// by a killed worker), that its follower has streamed the child's start
// and that `agentpool sessions list / tree / events`, other processes
// on the same database, show the run: the root, its running child, the
// child's log.
//
// arrived has a token after each event the follower streamed: got is
// looked at again on it, not in a loop of sleeps.
func checkLive(t *testing.T, cli, db string, st session.Store, got func() []event.Event, arrived <-chan struct{}) {
	var root, child string
	timeout := time.After(10 * time.Second)
wait:
	for {
		for _, e := range got() {
			switch v := e.(type) {
			case event.RunStarted:
				root = v.SessionID
			case event.SpawnSessionStart:
				child = v.ChildSessionID
			}
		}
		if child != "" {
			break
		}
		select {
		case <-arrived:
		case <-timeout:
			break wait
		}
	}
	if root == "" || child == "" {
		t.Errorf("the follower did not stream the root's start and its child's spawn while the child ran: %v", got())
		return
	}
	run := func(sub string, args ...string) string {
		cmd := exec.Command(cli, append([]string{"sessions", sub, "--db", db}, args...)...)
		cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Errorf("agentpool sessions %s %s: %v\n%s", sub, strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	if out := run("list"); !strings.Contains(out, root) {
		t.Errorf("sessions list lacks the live root %s:\n%s", root, out)
	}
	if out := run("tree", "--json", root); !strings.Contains(out, child) || !strings.Contains(out, `"running"`) {
		t.Errorf("sessions tree of the live root lacks its running child %s:\n%s", child, out)
	}
	if out := run("events", "--json", child); !strings.Contains(out, `"run_started"`) {
		t.Errorf("sessions events of the live child lacks its run_started:\n%s", out)
	}
	// All of that was while the run was live.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if s, err := st.GetSession(ctx, root); err != nil || s.Status != session.StatusRunning {
		t.Errorf("the root was %q (%v) after the checks, want them made while it ran", s.Status, err)
	}
}
