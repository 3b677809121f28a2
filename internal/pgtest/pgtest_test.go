package pgtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Without AGENTPOOL_TEST_POSTGRES a test skips and says how to run it;
// under CI=true it fails instead.
func TestUnset(t *testing.T) {
	if os.Getenv("PGTEST_CHILD") == "1" {
		URL(t)
		return
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUnset$", "-test.v")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, Env+"=") && !strings.HasPrefix(kv, "CI=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Env = append(cmd.Env, "PGTEST_CHILD=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		if !strings.Contains(string(out), "tests/pg/start.sh") {
			t.Errorf("CI=%q: the message does not say how to run the tests:\n%s", ci, out)
		}
		if failed := err != nil; failed != (ci == "true") || (ci == "" && !strings.Contains(string(out), "--- SKIP")) {
			t.Errorf("CI=%q: err %v\n%s", ci, err, out)
		}
	}
}
