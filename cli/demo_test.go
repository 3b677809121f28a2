package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemoPaced: on a terminal the built-in demo is paced, so that its
// live tree is seen (its root runs over a second), unless --fast; its
// final frame shows the whole tree, the worker of a member of the team
// included. The answer still goes to stdout.
func TestDemoPaced(t *testing.T) {
	rootTime := regexp.MustCompile(`✓ orchestrator · completed · [^\n]*· ([0-9.]+(?:ms|s))\n`)
	took := func(args ...string) (time.Duration, string) {
		r := startPTY(t, nil, append([]string{"run", "--db", ":memory:"}, args...)...)
		code, screen := r.wait(t)
		plain := stripCSI(screen)
		if code != 0 || !strings.Contains(r.stdout.String(), "research team found") {
			t.Fatalf("%q: exit %d, stdout %q:\n%s", args, code, r.stdout.String(), plain)
		}
		final := plain[strings.LastIndex(plain, "✓ orchestrator"):]
		m := rootTime.FindStringSubmatch(final)
		if m == nil {
			t.Fatalf("%q: no final root line:\n%s", args, final)
		}
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		return d, final
	}
	paced, final := took("hello")
	if paced < 1200*time.Millisecond {
		t.Errorf("the paced demo took %s, want over 1.2s", paced)
	}
	for _, want := range []string{"research [team]", "researcher [member]", "critic [member]", "fact_checker [worker]"} {
		if !strings.Contains(final, want) {
			t.Errorf("the final frame lacks %s:\n%s", want, final)
		}
	}
	if fast, _ := took("--fast", "hello"); fast >= paced {
		t.Errorf("--fast took %s, the paced demo %s", fast, paced)
	}
}
