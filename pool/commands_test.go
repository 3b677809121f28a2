package pool_test

import (
	"testing"

	"github.com/agentpool/agentpool/pool"
)

// The pool's slash commands: one per name (the last given wins), sorted;
// "/name args" expands with $ARGUMENTS or the arguments appended.
func TestCommands(t *testing.T) {
	p := build(t, pool.Config{Agents: []pool.AgentSpec{{Name: "a", Model: toolCaller{}}}}, pool.Options{Commands: []pool.Command{
		{Name: "review", Template: "old", Source: "user"},
		{Name: "fix", Template: "Fix issue $ARGUMENTS now."},
		{Name: "review", Template: "Review this.", Source: "project"},
	}})
	cs := p.Commands()
	if len(cs) != 2 || cs[0].Name != "fix" || cs[1].Source != "project" {
		t.Fatalf("Commands = %+v", cs)
	}
	for _, c := range []struct{ in, want string }{
		{"/fix 42", "Fix issue 42 now."},
		{"/review main.go", "Review this.\n\nmain.go"},
		{"/review", "Review this."},
		{"/nosuch x", "/nosuch x"},
		{"/etc/passwd", "/etc/passwd"},
		{"plain", "plain"},
	} {
		if got, _ := p.ExpandCommand(c.in); got != c.want {
			t.Errorf("ExpandCommand(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
