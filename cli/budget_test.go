package cli

import (
	"strings"
	"testing"
)

// TestRunBudgetFlags: --max-tokens stops the demo's whole run with stop
// reason budget, exit status 1 and the message naming budget and spend;
// a negative budget is refused before anything runs.
func TestRunBudgetFlags(t *testing.T) {
	r := runCLI(t, t.TempDir(), "run", "--db", ":memory:", "--max-tokens", "300", "research go")
	if r.code != 1 || !strings.Contains(r.stderr, "run stopped: budget of 300 tokens for the run reached: ") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, " · budget · ") {
		t.Errorf("no session line with stop reason budget:\n%s", r.stderr)
	}
	for flag, want := range map[string]string{
		"--max-tokens=-1": "--max-tokens: budget tokens -1: must not be negative",
		"--max-cost=-2":   "--max-cost: budget cost_usd -2: must not be negative",
		"--max-cost=1e12": "--max-cost: budget cost_usd 1e+12: at most 1e+06",
	} {
		r := runCLI(t, t.TempDir(), "run", "--db", ":memory:", flag, "hi")
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", flag, r.code, r.stderr, want)
		}
	}
}
