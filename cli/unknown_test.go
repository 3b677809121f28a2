package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestUnknownSubcommandEveryGroup: every command group of the tree (found
// by walking it, so a new group is covered) refuses a word that names none
// of its subcommands, with or without a flag after it, and prints nothing
// on stdout.
func TestUnknownSubcommandEveryGroup(t *testing.T) {
	var groups []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && c.HasParent() && c.Name() != "help" {
			groups = append(groups, c)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(Extensions{}, func(*cobra.Command) {}))
	if len(groups) < 3 {
		t.Fatalf("found %d command groups, want sessions, serve and completion at least", len(groups))
	}
	for _, g := range groups {
		path := strings.Fields(g.CommandPath())[1:]
		for _, extra := range [][]string{nil, {"--no-such-flag"}, {"x", "y"}} {
			root := newRootCmd(Extensions{}, func(*cobra.Command) {})
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			args := append(append(append([]string{}, path...), "frobnicate"), extra...)
			root.SetArgs(args)
			err := root.Execute()
			want := `unknown command "frobnicate" for "` + g.CommandPath() + `"`
			if err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%q: error %v, want %s", args, err, want)
			}
			if out.Len() != 0 {
				t.Errorf("%q: printed %q", args, out.String())
			}
		}
	}
}

// TestUnknownSubcommandCLI: exit status 1, the message and the close names
// on stderr; a group alone still prints its help (exit 0).
func TestUnknownSubcommandCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sessions", "frobnicate", "x"}, "agentpool: unknown command \"frobnicate\" for \"agentpool sessions\"\n"},
		{[]string{"serve", "grpc"}, "agentpool: unknown command \"grpc\" for \"agentpool serve\"\n"},
		{[]string{"sessions", "lst", "--all"}, "unknown command \"lst\" for \"agentpool sessions\"\n\nDid you mean this?\n\tlist\n"},
		{[]string{"serve", "opencod"}, "Did you mean this?\n\topencode\n"},
		{[]string{"rn", "hi"}, "Did you mean this?\n\trun\n"},
		{[]string{"completion", "bsh"}, "unknown command \"bsh\" for \"agentpool completion\"\n\nDid you mean this?\n\tbash\n"},
	} {
		r := runCLI(t, dir, c.args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want stderr with %q", c.args, r.code, r.stdout, r.stderr, c.want)
		}
	}
	r := runCLI(t, dir, "sessions")
	if r.code != 0 || !strings.Contains(r.stdout, "Available Commands:") {
		t.Errorf("sessions alone: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestCompletion: the shell completion docs/cli.md describes: the script,
// and the completions it asks the command line for.
func TestCompletion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runCLI(t, dir, "completion", "bash")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "# bash completion V2 for agentpool") {
		t.Errorf("completion bash: exit %d, stdout %.80q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, dir, "__complete", "sessions", "")
	if r.code != 0 || !strings.Contains(r.stdout, "\nlist\t") || !strings.Contains(r.stdout, "\ntree\t") {
		t.Errorf("completing sessions: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestServeAliases: AgentPool's serve-acp, serve-opencode, serve-agui (and
// serve-web) are the serve subcommands (the same help, so the same
// flags), and serve-acp answers an editor; another serve-X is unknown.
func TestServeAliases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"a2a", "acp", "agui", "opencode", "web"} {
		alias, sub := runCLI(t, dir, "serve-"+name, "--help"), runCLI(t, dir, "serve", name, "--help")
		if alias != sub || sub.code != 0 || !strings.Contains(sub.stdout, "agentpool serve "+name+" [flags]") {
			t.Errorf("serve-%s --help: %+v\nserve %s --help: %+v", name, alias, name, sub)
		}
	}
	r := runCLI(t, dir, "serve-grpc")
	if r.code != 1 || !strings.Contains(r.stderr, `unknown command "serve-grpc" for "agentpool"`) {
		t.Errorf("serve-grpc: exit %d, stderr %q", r.code, r.stderr)
	}
	cmd := exec.Command(cliBinary(t), "serve-acp", "--db", ":memory:")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,`) {
		t.Errorf("serve-acp: %v, stdout %q", err, out)
	}
}
