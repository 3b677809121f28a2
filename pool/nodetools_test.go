package pool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/spawn"
	"github.com/agentpool/agentpool/tool"
)

// toolUser is a ToolNode: a prompt "TOOL JSON" runs one of its tools in
// its session, any other prompt answers with its tools' names.
type toolUser struct {
	name  string
	tools []tool.Tool
}

func (n toolUser) Name() string                 { return n.name }
func (n toolUser) Description() string          { return "" }
func (n toolUser) SourceType() event.SourceType { return event.SourceAgent }
func (n toolUser) ModelID() string              { return "" }

func (n toolUser) WithTools(tools []tool.Tool, toolsets []tool.Toolset) spawn.Node {
	n.tools = append(n.tools, tools...)
	for _, ts := range toolsets {
		got, _ := ts.Tools(context.Background())
		n.tools = append(n.tools, got...)
	}
	return n
}

func (n toolUser) Run(ctx context.Context, inv *spawn.Invocation) spawn.Result {
	inv.Sink.Emit(event.RunStarted{SessionID: inv.Session.ID, RunID: inv.RunID, AgentName: n.name, ParentSessionID: inv.Session.ParentID})
	var names []string
	out := ""
	name, args, _ := strings.Cut(inv.Prompt, " ")
	for _, t := range n.tools {
		names = append(names, t.Info().Name)
		if t.Info().Name == name {
			out = tool.Run(spawn.WithInvocation(ctx, inv), t, tool.Call{ID: "c1", Name: name, Args: json.RawMessage(args), SessionID: inv.Session.ID}).Content
		}
	}
	if out == "" {
		out = strings.Join(names, ",")
	}
	inv.Sink.Emit(event.StreamComplete{Message: event.Message{Role: "assistant", Content: out}})
	return spawn.Result{Output: out, StopReason: event.StopCompleted}
}

// A ToolNode with NodeTools gets what an agent with the same fields
// gets: its own tools, its builtin toolsets' (file tools acting in its
// Dir), its worker tools and Options.ExtraTools; one without gets
// nothing.
func TestNodeToolsGiveAToolNodeItsTools(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("in the member's dir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	own := tool.New("own", "its own", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "own"}, nil
	})
	extra := tool.New("extra", "every agent's", func(context.Context, tool.Call, struct{}) (tool.Result, error) {
		return tool.Result{Content: "extra"}, nil
	})
	p := build(t, pool.Config{
		Nodes: []spawn.Node{toolUser{name: "ext"}, toolUser{name: "bare"}, shout{}},
		NodeTools: map[string]pool.NodeTools{"ext": {
			Tools: []tool.Tool{own}, Builtin: []string{config.ToolsetPlan, config.ToolsetFileAccess}, Disabled: []string{"Write"},
			Workers: []pool.WorkerSpec{{Name: "shout"}}, Dir: dir,
		}},
		Workspace: t.TempDir(),
	}, pool.Options{ExtraTools: []tool.Tool{extra}})
	names := run(t, p, "ext", "list").Output
	for _, want := range []string{"own,", ",TodoWrite,", ",Read,", ",ask_shout,", ",extra"} {
		if !strings.Contains(names, want) {
			t.Errorf("tools %q lack %q", names, want)
		}
	}
	if slices.Contains(strings.Split(names, ","), "Write") {
		t.Errorf("tools %q: Write was turned off", names)
	}
	if out := run(t, p, "ext", `Read {"file_path":"notes.txt"}`).Output; !strings.Contains(out, "in the member's dir") {
		t.Errorf("Read in the member's dir: %q", out)
	}
	if out := run(t, p, "ext", `ask_shout {"prompt":"hi"}`).Output; !strings.Contains(out, `"output":"HI"`) {
		t.Errorf("ask_shout: %q", out)
	}
	if out := run(t, p, "bare", "list").Output; out != "" {
		t.Errorf("a ToolNode without NodeTools got %q", out)
	}
}

// NodeTools name ToolNodes of Nodes, with toolsets and workers that are
// checked as an agent's.
func TestNodeToolsRejects(t *testing.T) {
	_, err := pool.Build(pool.Config{
		Nodes: []spawn.Node{toolUser{name: "ext"}, shout{}},
		NodeTools: map[string]pool.NodeTools{
			"ext":   {Builtin: []string{"nope"}, Workers: []pool.WorkerSpec{{Name: "ext"}, {Name: "ghost"}}},
			"shout": {},
			"none":  {},
		},
	}, pool.Options{})
	if err == nil {
		t.Fatal("built")
	}
	for _, want := range []string{
		`node "ext": Builtin[0]: unknown toolset type "nope"`,
		`node "ext": Workers[0]: node "ext" cannot be its own worker`,
		`node "ext": Workers[1]: unknown agent, team or node "ghost"`,
		`node "shout": has NodeTools, but it runs no tools`,
		`Config.NodeTools["none"]: no node of Config.Nodes has that name`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
