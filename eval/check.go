package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// check evaluates a against what the case's run did.
func check(ctx context.Context, r Runner, a Assertion, out Outcome, c Case, dir string) Check {
	ch := Check{Assertion: a.String()}
	fail := func(format string, args ...any) Check {
		ch.Reason = fmt.Sprintf(format, args...)
		return ch
	}
	switch {
	case a.Contains != "":
		if !strings.Contains(out.Answer, a.Contains) {
			return fail("the answer does not contain %q", a.Contains)
		}
	case a.NotContains != "":
		if strings.Contains(out.Answer, a.NotContains) {
			return fail("the answer contains %q", a.NotContains)
		}
	case a.Regex != nil:
		if !a.Regex.MatchString(out.Answer) {
			return fail("the answer does not match %q", a.Regex.String())
		}
	case a.JSONSchema != nil:
		var v any
		if err := json.Unmarshal([]byte(jsonPart(out.Answer)), &v); err != nil {
			return fail("the answer is not JSON: %v", err)
		}
		if err := a.JSONSchema.Validate(v); err != nil {
			return fail("%v", err)
		}
	case a.ToolCalled != "":
		if !slices.Contains(out.Tools, a.ToolCalled) {
			return fail("%s was not called (called: %s)", a.ToolCalled, listOr(out.Tools))
		}
	case a.ChildSpawned != "":
		if !slices.Contains(out.Children, a.ChildSpawned) {
			return fail("no child session of %s (spawned: %s)", a.ChildSpawned, listOr(out.Children))
		}
	case a.MaxCostUSD != nil:
		if out.CostUSD > *a.MaxCostUSD {
			return fail("cost $%.6f is over $%g", out.CostUSD, *a.MaxCostUSD)
		}
	case a.MaxTokens != nil:
		if n := out.Usage.InputTokens + out.Usage.OutputTokens; n > *a.MaxTokens {
			return fail("%d tokens is over %d", n, *a.MaxTokens)
		}
	case a.MaxDuration > 0:
		if out.Duration > a.MaxDuration {
			return fail("took %s, over %s", out.Duration.Round(1e6), a.MaxDuration)
		}
	case a.Judge != nil:
		verdict, err := r.Judge(ctx, a.Judge.Agent, judgePrompt(c, a.Judge.Criteria, out.Answer), dir)
		if err != nil {
			return fail("the judge %s failed: %v", a.Judge.Agent, err)
		}
		v := strings.ToUpper(strings.TrimSpace(verdict))
		switch {
		case strings.HasPrefix(v, "PASS"):
		case strings.HasPrefix(v, "FAIL"):
			return fail("the judge %s: %s", a.Judge.Agent, clip(strings.TrimSpace(verdict), 300))
		default:
			return fail("the judge %s answered neither PASS nor FAIL: %s", a.Judge.Agent, clip(strings.TrimSpace(verdict), 300))
		}
	}
	ch.Pass = true
	return ch
}

// judgePrompt is what a judge agent is asked.
func judgePrompt(c Case, criteria, answer string) string {
	return "You judge an AI agent's answer. Reply with PASS or FAIL on the first line, then one line of why.\n\n" +
		"Criteria:\n" + criteria + "\n\nThe task the agent was given:\n" + c.Prompt + "\n\nThe agent's answer:\n" + answer
}

// jsonPart is the answer's JSON: the whole answer, or the body of its
// first fenced code block.
func jsonPart(s string) string {
	t := strings.TrimSpace(s)
	if i := strings.Index(t, "```"); i >= 0 {
		body := t[i+3:]
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			body = body[nl+1:]
		}
		if j := strings.Index(body, "```"); j >= 0 {
			return body[:j]
		}
	}
	return t
}

func listOr(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
