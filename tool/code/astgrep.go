package code

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentpool/agentpool/tool"
)

const astGrepDescription = "Search or rewrite one source file by syntax tree with ast-grep. " +
	"rule is an ast-grep rule object, e.g. {\"pattern\": \"console.log($ARG)\"}, or with kind/has/inside/all/any/not. " +
	"In patterns $NAME matches one node and $$$NAME any number of nodes. fix is a replacement pattern using the " +
	"rule's $NAMEs; with fix and dry_run false the file is rewritten, otherwise the matches (and the rewrites they " +
	"would get) are only listed. The language is detected from the file extension. Needs the ast-grep program."

type astGrepArgs struct {
	Path   string         `json:"path" jsonschema:"description=Path of the file, absolute or relative to the workspace"`
	Rule   map[string]any `json:"rule" jsonschema:"description=ast-grep rule, e.g. {\"pattern\": \"foo($A)\"}"`
	Fix    string         `json:"fix,omitempty" jsonschema:"description=Replacement pattern using the rule's metavariables"`
	DryRun *bool          `json:"dry_run,omitempty" jsonschema:"description=List the changes without writing them (default true)"`
}

// maxMatches bounds the matches listed to the model.
const maxMatches = 200

// sgMatch is one match in ast-grep's JSON output (the fields used).
type sgMatch struct {
	Text  string `json:"text"`
	Range struct {
		ByteOffset struct{ Start, End int } `json:"byteOffset"`
		Start      struct{ Line, Column int } `json:"start"`
	} `json:"range"`
	Replacement        *string `json:"replacement"`
	ReplacementOffsets *struct {
		Start, End int
	} `json:"replacementOffsets"`
}

// astGrepBin finds the ast-grep program: `ast-grep`, or `sg` when it is
// ast-grep (on many systems sg is the shadow suite's switch-group).
func (t *Toolset) astGrepBin(ctx context.Context, dir string) (string, error) {
	if p, err := t.lookPath("ast-grep"); err == nil {
		return p, nil
	}
	if p, err := t.lookPath("sg"); err == nil {
		if r, err := runProgram(ctx, dir, p, []string{"--version"}, nil); err == nil && strings.HasPrefix(string(r.stdout), "ast-grep") {
			return p, nil
		}
	}
	return "", fmt.Errorf("ast-grep is not installed: install it (npm install -g @ast-grep/cli, cargo install ast-grep, or pip install ast-grep-cli)")
}

func (t *Toolset) astGrep(ctx context.Context, call tool.Call, a astGrepArgs) (tool.Result, error) {
	if len(a.Rule) == 0 {
		return tool.Errorf("rule is required, e.g. {\"pattern\": \"foo($A)\"}"), nil
	}
	lang := languageOf(a.Path)
	if lang == "" {
		return tool.Errorf("Cannot tell the language of %s from its extension", a.Path), nil
	}
	f, err := t.readFile(ctx, a.Path)
	if err != nil {
		return tool.Errorf("Cannot read the file: %v", err), nil
	}
	defer f.root.Close()
	dir := f.root.Workspace().Root()
	bin, err := t.astGrepBin(ctx, dir)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	rule := map[string]any{"id": "agentpool", "language": lang, "rule": a.Rule}
	if a.Fix != "" {
		rule["fix"] = a.Fix
	}
	inline, err := json.Marshal(rule) // JSON is YAML, which --inline-rules reads
	if err != nil {
		return tool.Errorf("rule cannot be encoded: %v", err), nil
	}
	r, err := runProgram(ctx, dir, bin, []string{"scan", "--inline-rules", string(inline), "--json=compact", "--stdin"}, f.data)
	if err != nil {
		return tool.Errorf("ast-grep failed: %v", err), nil
	}
	if r.code != 0 {
		return tool.Errorf("ast-grep refused the rule (exit code %d):\n%s", r.code, strings.TrimSpace(string(r.stderr))), nil
	}
	var ms []sgMatch
	if err := json.Unmarshal(r.stdout, &ms); err != nil {
		return tool.Errorf("ast-grep's output is not the JSON expected: %v", err), nil
	}
	rel := f.root.Workspace().Rel(f.abs)
	md := map[string]any{"matches": len(ms), "language": lang}
	if len(ms) == 0 {
		return tool.Result{Content: fmt.Sprintf("No match in %s.", rel), Metadata: md}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d match(es) in %s:\n", len(ms), rel)
	var locs []tool.Location
	for i, m := range ms {
		if i == maxMatches {
			fmt.Fprintf(&b, "... %d more\n", len(ms)-maxMatches)
			break
		}
		line := m.Range.Start.Line + 1 // ast-grep's JSON counts lines from 0
		locs = append(locs, tool.Location{Path: f.abs, Line: line})
		fmt.Fprintf(&b, "%d:%d: %s\n", line, m.Range.Start.Column+1, m.Text)
		if m.Replacement != nil {
			fmt.Fprintf(&b, "  -> %s\n", *m.Replacement)
		}
	}
	if a.Fix == "" || a.DryRun == nil || *a.DryRun {
		if a.Fix != "" {
			b.WriteString("Dry run: the file is unchanged (dry_run false applies the fix).\n")
		}
		return tool.Result{Content: b.String(), Locations: locs, Metadata: md}, nil
	}
	out, err := applyFixes(f.data, ms)
	if err != nil {
		return tool.Errorf("The fix cannot be applied: %v; the file is unchanged", err), nil
	}
	if err := f.write(out); err != nil {
		return tool.Errorf("Cannot write the file: %v", err), nil
	}
	fmt.Fprintf(&b, "Rewrote %s.\n", rel)
	md["changed"] = true
	old := string(f.data)
	return tool.Result{Content: b.String(), Locations: locs, Metadata: md,
		Diffs: []tool.Diff{{Path: f.abs, OldText: &old, NewText: string(out)}}}, nil
}

// applyFixes replaces each match's replacementOffsets with its
// replacement, from the last to the first; overlapping or out-of-range
// offsets are an error.
func applyFixes(src []byte, ms []sgMatch) ([]byte, error) {
	type edit struct {
		start, end int
		text       string
	}
	var es []edit
	for _, m := range ms {
		if m.Replacement == nil {
			continue
		}
		e := edit{m.Range.ByteOffset.Start, m.Range.ByteOffset.End, *m.Replacement}
		if o := m.ReplacementOffsets; o != nil {
			e.start, e.end = o.Start, o.End
		}
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b edit) int { return b.start - a.start })
	out := slices.Clone(src)
	last := len(src)
	for _, e := range es {
		if e.start < 0 || e.end < e.start || e.end > last {
			return nil, fmt.Errorf("overlapping or out-of-range edit at bytes %d-%d", e.start, e.end)
		}
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
		last = e.start
	}
	return out, nil
}
