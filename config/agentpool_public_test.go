package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The public AgentPool corpus: manifests collected from AgentPool's and
// WolfHarness's repositories (docs, examples, tests) into a directory
// outside this repository (their files are not ours to commit). The tests
// run only when AGENTPOOL_CORPUS_DIR names it; docs/agentpool-compat.md
// says how it is collected and what it measured.

// publicCorpus loads every .yml/.yaml file under AGENTPOOL_CORPUS_DIR and
// returns, by file (relative to the directory), the issues of those that
// did not load (nil for the ones that did).
func publicCorpus(t *testing.T) (dir string, results map[string][]Issue) {
	t.Helper()
	dir = os.Getenv("AGENTPOOL_CORPUS_DIR")
	if dir == "" {
		t.Skip("AGENTPOOL_CORPUS_DIR is not set (see docs/agentpool-compat.md, \"Measured against public manifests\")")
	}
	results = map[string][]Issue{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(path); ext != ".yml" && ext != ".yaml" {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		_, lerr := Load(path)
		var ce *Error
		switch {
		case lerr == nil:
			results[rel] = nil
		case errors.As(lerr, &ce):
			results[rel] = ce.Issues
		default:
			results[rel] = []Issue{{File: path, Msg: lerr.Error()}}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) == 0 {
		t.Fatalf("no .yml or .yaml file under %s", dir)
	}
	return dir, results
}

// TestPublicCorpus reports how many of the corpus's manifests load, by
// subdirectory and in all, and every refusal's message.
func TestPublicCorpus(t *testing.T) {
	dir, results := publicCorpus(t)
	names := make([]string, 0, len(results))
	for name := range results {
		names = append(names, name)
	}
	sort.Strings(names)
	type tally struct{ ok, all int }
	bySub := map[string]*tally{}
	total := tally{}
	for _, name := range names {
		sub, _, found := strings.Cut(name, string(filepath.Separator))
		if !found {
			sub = "."
		}
		if bySub[sub] == nil {
			bySub[sub] = &tally{}
		}
		bySub[sub].all++
		total.all++
		if results[name] == nil {
			bySub[sub].ok++
			total.ok++
			continue
		}
		for _, is := range results[name] {
			t.Logf("refused %s", is)
		}
	}
	// The refusals grouped by message, most frequent first: what keeps
	// manifests from loading.
	groups := map[string]int{}
	refused := 0
	for _, issues := range results {
		if issues != nil {
			refused++
		}
		for _, is := range issues {
			groups[is.Msg]++
		}
	}
	msgs := make([]string, 0, len(groups))
	for m := range groups {
		msgs = append(msgs, m)
	}
	sort.Slice(msgs, func(i, j int) bool {
		if groups[msgs[i]] != groups[msgs[j]] {
			return groups[msgs[i]] > groups[msgs[j]]
		}
		return msgs[i] < msgs[j]
	})
	for _, m := range msgs {
		t.Logf("%4d × %s", groups[m], m)
	}
	subs := make([]string, 0, len(bySub))
	for s := range bySub {
		subs = append(subs, s)
	}
	sort.Strings(subs)
	for _, s := range subs {
		t.Logf("%s: %d of %d load", s, bySub[s].ok, bySub[s].all)
	}
	t.Logf("%s: %d of %d manifests load, %d refused", dir, total.ok, total.all, refused)
}

// TestPublicCorpusNoBareUnknownField checks that no key of a public
// manifest is refused as a bare "unknown field" or "unknown toolset type":
// each AgentPool or WolfHarness key is either supported or refused with
// what it is and what to do.
func TestPublicCorpusNoBareUnknownField(t *testing.T) {
	_, results := publicCorpus(t)
	for _, issues := range results {
		for _, is := range issues {
			if bareUnknown(is.Msg) && docMistakes[is.Field] == "" {
				t.Errorf("bare refusal: %s", is)
			}
		}
	}
}

// docMistakes are fields of the corpus that are mistakes of the document
// they come from, not keys of any AgentPool version: "unknown field" is
// the right answer for them.
var docMistakes = map[string]string{
	"responses.AnalysisResult.CodeMetrics": "llmling-agent's docs/config_file/manifest.md indents the response CodeMetrics one level too deep, inside AnalysisResult",
}

// bareUnknown reports a message that only says a key or toolset type is
// unknown.
func bareUnknown(msg string) bool {
	return strings.HasPrefix(msg, "unknown field ") || strings.HasPrefix(msg, "unknown toolset type ")
}
