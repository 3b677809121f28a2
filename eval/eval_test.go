package eval

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/event"
)

const suiteYAML = `manifest: pool.yaml
concurrency: 2
cases:
  - name: one
    prompt: go
    files: {a/b.md: hi}
    assert:
      - contains: "42"
      - regex: "^\\{"
      - json_schema: {type: object, required: [answer]}
      - tool_called: Write
      - child_spawned: helper
      - max_tokens: 10
      - max_cost_usd: 0.5
      - max_duration: 1s
      - judge: {agent: j, criteria: fine}
  - prompt: again
`

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	s, err := Parse("/x/suite.yaml", []byte(suiteYAML))
	if err != nil {
		t.Fatal(err)
	}
	if s.Manifest != "/x/pool.yaml" || s.Concurrency != 2 || len(s.Cases) != 2 || len(s.Cases[0].Assert) != 9 {
		t.Fatalf("suite %+v", s)
	}
	if s.Cases[1].Name != "case 2" || s.Cases[0].Files["a/b.md"] != "hi" {
		t.Errorf("cases %+v", s.Cases)
	}
}

func TestParseErrorsNameFileLineField(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"cases: []", "s.yaml:1: cases: a suite needs a list of cases"},
		{"cases:\n  - prompt: go\n    asert: []", `s.yaml:2: cases[0]: line 3: unknown field "asert"`},
		{"cases:\n  - name: a\n", "s.yaml:2: cases[0].prompt: a case needs a prompt"},
		{"cases:\n  - prompt: go\n    assert:\n      - {contains: a, regex: b}", "s.yaml:4: cases[0].assert[0]: an assertion has exactly one of"},
		{"cases:\n  - prompt: go\n    assert:\n      - regex: '('", "s.yaml:4: cases[0].assert[0]: regex:"},
		{"cases:\n  - prompt: go\n    files: {../x: y}", `cases[0].files: "../x" is not a relative path inside the workspace`},
		{"concurrency: 99\ncases:\n  - prompt: go", "s.yaml:1: concurrency: must be 1 to 32"},
		{"cases:\n  - &a {name: a, prompt: go}\n  - *a", "aliases are not accepted"},
		{"cases:\n  - {name: a, prompt: go}\n  - {name: a, prompt: go}", `s.yaml:3: cases[1].name: "a" is also the name of the case at line 2`},
	} {
		_, err := Parse("s.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.yaml, err, c.want)
		}
	}
}

type fakeRunner struct {
	mu      sync.Mutex
	out     map[string]Outcome
	verdict string
	asked   []string
}

func (f *fakeRunner) Run(_ context.Context, c Case, _ string) Outcome { return f.out[c.Prompt] }

func (f *fakeRunner) Judge(_ context.Context, agent, prompt, _ string) (string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, agent+": "+prompt)
	f.mu.Unlock()
	return f.verdict, nil
}

func noWorkspace(Case) (string, func(), error) { return "/ws", func() {}, nil }

func TestRunChecksEveryAssertion(t *testing.T) {
	s, err := Parse("s.yaml", []byte(suiteYAML))
	if err != nil {
		t.Fatal(err)
	}
	good := Outcome{Answer: `{"answer": 42}`, Stop: event.StopCompleted, Usage: event.Usage{InputTokens: 4, OutputTokens: 5},
		CostUSD: 0.1, Duration: time.Millisecond, Tools: []string{"task", "Write"}, Children: []string{"helper"}}
	r := &fakeRunner{out: map[string]Outcome{"go": good, "again": {Stop: event.StopError, Err: errors.New("boom")}}, verdict: "PASS fine"}
	var seen []string
	rs := Run(context.Background(), s, r, noWorkspace, func(done, total int, res Result) { seen = append(seen, res.Case) })
	if len(rs) != 2 || !rs[0].Pass || rs[1].Pass || rs[1].Error != "boom" || len(seen) != 2 {
		t.Fatalf("results %+v, progress %v", rs, seen)
	}
	if len(r.asked) != 1 || !strings.Contains(r.asked[0], `{"answer": 42}`) || !strings.HasPrefix(r.asked[0], "j: ") {
		t.Errorf("the judge was asked %q", r.asked)
	}

	bad := Outcome{Answer: "no", Stop: event.StopCompleted, Usage: event.Usage{InputTokens: 40}, CostUSD: 1, Duration: 2 * time.Second}
	r = &fakeRunner{out: map[string]Outcome{"go": bad, "again": good}, verdict: "FAIL not a number"}
	rs = Run(context.Background(), s, r, noWorkspace, nil)
	var reasons []string
	for _, c := range rs[0].Checks {
		if c.Pass {
			t.Errorf("%s passed on a bad outcome", c.Assertion)
		}
		reasons = append(reasons, c.Reason)
	}
	for _, want := range []string{`does not contain "42"`, "does not match", "not JSON", "Write was not called (called: none)",
		"no child session of helper", "40 tokens is over 10", "cost $1.000000 is over $0.5", "took 2s, over 1s", "the judge j: FAIL not a number"} {
		if !strings.Contains(strings.Join(reasons, "\n"), want) {
			t.Errorf("reasons lack %q:\n%s", want, strings.Join(reasons, "\n"))
		}
	}
	var table, junit, js bytes.Buffer
	if err := WriteTable(&table, rs); err != nil || !strings.Contains(table.String(), "1 passed, 1 failed") || !strings.Contains(table.String(), "✗ one") {
		t.Errorf("table %v:\n%s", err, table.String())
	}
	if err := WriteJUnit(&junit, "s", rs); err != nil {
		t.Fatal(err)
	}
	var parsed junitSuites
	if err := xml.Unmarshal(junit.Bytes(), &parsed); err != nil || parsed.Suites[0].Failures != 1 || parsed.Suites[0].Cases[0].Failure == nil {
		t.Errorf("junit %v:\n%s", err, junit.String())
	}
	if err := WriteJSON(&js, rs); err != nil || !strings.Contains(js.String(), `"failed": 1`) {
		t.Errorf("json %v:\n%s", err, js.String())
	}
	var cmp bytes.Buffer
	if err := WriteComparison(&cmp, "a.yaml", "b.yaml", rs, rs); err != nil || !strings.Contains(cmp.String(), "a.yaml: 1 passed, 1 failed; b.yaml: 1 passed, 1 failed") {
		t.Errorf("comparison %v:\n%s", err, cmp.String())
	}
}
