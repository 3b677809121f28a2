package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/event"
)

// An external agent that takes MCP over stdio only (the test agent
// mcpagent with MCPAGENT_NO_HTTP) reaches its member's tools through
// `agentpool mcp-relay`, which the command line offers it (this test
// binary is the CLI): its `task` call delegates back into the pool, and
// that delegation is a child of the agent's session.
func TestMCPRelayServesAnAgentWithoutHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcpagent")
	build := exec.Command("go", "build", "-o", bin, "../external/acpagent/testdata/mcpagent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build mcpagent: %v\n%s", err, out)
	}
	yaml := `
agents:
  helper:
    description: says hi
    model: {type: test, custom_output_text: "helper says hi"}
  ext:
    type: acp
    provider: custom
    command: ` + bin + `
    env: {MCPAGENT_NO_HTTP: "1"}
    tools: [subagent]
`
	if err := os.WriteFile(filepath.Join(dir, "agentpool.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, dir, "run", "--db", ":memory:", "--output", "jsonl", "ext",
		"servers\ncall task {\"agent_or_team\":\"helper\",\"prompt\":\"say hi\"}")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var root, output string
	var grand event.SpawnSessionStart // ext is the root: helper is its child
	var grandEnd event.SpawnSessionEnd
	for _, e := range decodeJSONL(t, r.stdout) {
		switch v := e.(type) {
		case event.RunStarted:
			if root == "" {
				root = v.SessionID
			}
		case event.SpawnSessionStart:
			grand = v
		case event.SpawnSessionEnd:
			grandEnd = v
		case event.StreamComplete:
			output = v.Message.Content
		}
	}
	if grand.ChildSessionID == "" || grand.ParentSessionID != root || grand.SpawnMechanism != event.MechanismTask || grand.ToolCallID != "tc_1" {
		t.Errorf("helper's start %+v (root %s)", grand, root)
	}
	if grandEnd.LastAssistantMessage != "helper says hi" {
		t.Errorf("helper's end %+v", grandEnd)
	}
	for _, want := range []string{"servers: agentpool", `"output":"helper says hi"`} {
		if !strings.Contains(output, want) {
			t.Errorf("ext's answer %q lacks %q", output, want)
		}
	}
}
