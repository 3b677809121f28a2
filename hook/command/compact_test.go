package command_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
)

// PreCompact hooks run before an agent's older turns are summarised,
// selected by the trigger: a run whose conversation passes its model's
// compact_threshold fires the "auto" group, never the "manual" one, and
// the run goes on to its answer.
func TestPreCompactFiresOnAutoCompaction(t *testing.T) {
	long := strings.Repeat("x", 3000)
	p := newProject(t, fmt.Sprintf(`
agents:
  main:
    model:
      type: scripted
      context_window: 4000
      compact_threshold: 0.5
      turns:
        - tool_calls: [{name: probe, args: {path: %q}}]
        - tool_calls: [{name: probe, args: {path: %q}}]
        - text: "done"
`, long+"1", long+"2"), settingsJSON(t, map[string][]map[string]any{
		"PreCompact": {group("auto", logTo("auto")), group("manual", logTo("manual"))},
	}), nil, &probe{})
	res := p.run("read twice")
	if res.Result.StopReason != event.StopCompleted || res.Result.Output != "done" {
		t.Fatalf("run ended %s with %q (%v)", res.Result.StopReason, res.Result.Output, res.Result.Err)
	}
	got := p.logged1("auto")
	if len(got) != 1 {
		t.Fatalf("PreCompact auto ran %d times, want 1: %v", len(got), got)
	}
	if got[0]["hook_event_name"] != "PreCompact" || got[0]["trigger"] != "auto" || got[0]["custom_instructions"] != "" || got[0]["session_id"] != res.SessionID {
		t.Errorf("PreCompact payload %v", got[0])
	}
	if _, err := os.Stat(filepath.Join(p.dir, "manual.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the manual group ran on an auto compaction (%v)", err)
	}
}
