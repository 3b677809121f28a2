package acpagent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/internal/opencodetest"
	"github.com/agentpool/agentpool/spawn"
)

// editRun is one delegation to the real opencode with
// "permission": {"edit": "ask"}, whose fake model makes call; existing,
// when not empty, is hello.txt's text before the run.
type editRun struct {
	parent    spawn.Result
	end       event.SpawnSessionEnd
	calls     []event.ToolCallComplete // the child's
	approvals []approval.Request
	writes    []hook.ToolOutcome // our Write tool's results
	results   []string           // the tool results opencode sent its model
	file      string             // hello.txt after the run ("" and absent: missing)
	missing   bool
}

func runEdit(t *testing.T, call *opencodetest.ToolCall, existing string, answer func(approval.Request) approval.Reply) editRun {
	t.Helper()
	model := opencodetest.NewModel(t, "Done with the file.")
	model.ToolCalls = []opencodetest.ToolCall{*call}
	oc := opencodetest.NewSetup(t, model, `,
  "permission": {"edit": "ask"}`)
	file := filepath.Join(oc.Project, "hello.txt")
	if existing != "" {
		if err := os.WriteFile(file, []byte(existing), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	node := newNode(t, acpagentConfig(oc, "opencode"))
	reg := hook.New(hook.Options{})
	var mu sync.Mutex
	var r editRun
	reg.OnToolResult.Register(func(_ context.Context, o hook.ToolOutcome) error {
		if o.ToolName == "Write" {
			mu.Lock()
			r.writes = append(r.writes, o)
			mu.Unlock()
		}
		return nil
	})
	p, seen := testPoolWithHooks(t, reg, answer, node, parentNode{name: "parent", child: node, times: 1})
	res, evs := run(t, context.Background(), p, "parent", "Change hello.txt.", nil)
	for _, e := range evs {
		switch v := e.(type) {
		case event.SpawnSessionEnd:
			r.end = v
		case event.Subagent:
			if c, ok := v.Event.(event.ToolCallComplete); ok {
				r.calls = append(r.calls, c)
			}
		}
	}
	r.parent = res.Result
	r.approvals, r.results = seen.all(), model.ToolResults()
	b, err := os.ReadFile(file)
	r.file, r.missing = string(b), os.IsNotExist(err)
	mu.Lock()
	defer mu.Unlock()
	return r
}

// opencode's edit request reaches the approval broker, labelled with the
// member and showing the diff; allowed once, opencode sends the new
// content with fs/write_text_file and our Write tool writes it (its
// result reaches tools/result), for a new file and for an existing one
// that opencode read itself, never through fs/read_text_file: the
// approved diff stands in for that read.
func TestOpencodeEditAllowedGoesThroughOurWrite(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	for _, c := range []struct {
		name, existing, want string
		call                 opencodetest.ToolCall
	}{
		{name: "new file", want: "hello from opencode\n",
			call: opencodetest.ToolCall{Name: "write", Args: `{"filePath":"hello.txt","content":"hello from opencode\n"}`}},
		{name: "existing file", existing: "old line\nkept\n", want: "new line\nkept\n",
			call: opencodetest.ToolCall{Name: "edit", Args: `{"filePath":"hello.txt","oldString":"old line","newString":"new line"}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runEdit(t, &c.call, c.existing, func(approval.Request) approval.Reply { return approval.AllowOnce })
			if r.end.StopReason != event.StopCompleted || r.end.LastAssistantMessage != "Done with the file." {
				t.Errorf("child end %+v", r.end)
			}
			// Asked once: the edit opencode asked permission for is not
			// asked again as our Write (tool_approval asks before Write).
			if len(r.approvals) != 1 || r.approvals[0].Agent != "opencode" || r.approvals[0].Tool != "edit" ||
				!strings.Contains(r.approvals[0].Rule, "opencode asks permission") || !strings.Contains(string(r.approvals[0].Input), "hello.txt") {
				t.Errorf("approval requests %+v", r.approvals)
			}
			if len(r.writes) != 1 || r.writes[0].IsError || r.writes[0].SessionID != r.end.ChildSessionID ||
				!strings.Contains(string(r.writes[0].Input), `"content":`+quote(c.want)) {
				t.Errorf("our Write: %+v", r.writes)
			}
			if len(r.results) != 1 || !strings.Contains(r.results[0], "successfully") {
				t.Errorf("the tool results opencode's model got: %q", r.results)
			}
			if r.file != c.want {
				t.Errorf("hello.txt %q, want %q", r.file, c.want)
			}
		})
	}
}

// Rejected, the edit is not made: our Write never runs and there is no
// file. opencode shows the refusal as its tool call's failed result and
// ends its turn there (it does not ask its model again); the child ends
// completed and the parent goes on.
func TestOpencodeEditRejected(t *testing.T) {
	t.Parallel() // mostly waits on its agent processes
	r := runEdit(t, &opencodetest.ToolCall{Name: "write", Args: `{"filePath":"hello.txt","content":"hello from opencode\n"}`}, "",
		func(approval.Request) approval.Reply { return approval.RejectOnce })
	if len(r.approvals) != 1 || r.approvals[0].Tool != "edit" {
		t.Errorf("approval requests %+v", r.approvals)
	}
	if len(r.writes) != 0 || !r.missing {
		t.Errorf("written: %+v, hello.txt %q", r.writes, r.file)
	}
	if len(r.calls) != 1 || !r.calls[0].IsError || !strings.Contains(r.calls[0].ToolResult, "rejected") {
		t.Errorf("the child's tool calls %+v", r.calls)
	}
	if r.end.StopReason != event.StopCompleted || r.parent.StopReason != event.StopCompleted || r.parent.Output != "done" {
		t.Errorf("child end %+v, parent %+v", r.end, r.parent)
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
