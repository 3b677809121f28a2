package floors

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// notLeaves are the internal packages allowed to import agentpool
// packages that are not leaves, each with why. Everything else under
// internal/ is a leaf helper (issue 32, item 5): a subsystem belongs in a
// public package (cli, claudecode, tracing) or beside its one user.
var notLeaves = map[string]string{
	// The engine's private seam into the agent loop (spawn.Env's optional
	// methods, the worker side of the agents' hook calls): internal on
	// purpose, so that a program embedding the pool never sees it.
	"internal/durablewire": "imports agent and spawn, whose seams it names",
}

// TestInternalHoldsLeavesOnly: every package under internal/ that can be
// imported (not a program: the generators run by go generate are package
// main) imports only the standard library, third-party modules and other
// internal leaves, but those listed in notLeaves.
func TestInternalHoldsLeavesOnly(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list packages: %v", err)
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Name}}\t{{join .Imports \" \"}}", module+"internal/...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	type internalPkg struct {
		main    bool
		imports []string // the module's packages it imports, relative
	}
	pkgs := map[string]internalPkg{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		var own []string
		for _, imp := range strings.Fields(f[2]) {
			if rel, ok := strings.CutPrefix(imp, module); ok {
				own = append(own, rel)
			}
		}
		pkgs[strings.TrimPrefix(f[0], module)] = internalPkg{main: f[1] == "main", imports: own}
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d internal packages: is this still the module?", len(pkgs))
	}
	var names []string
	for name := range pkgs {
		names = append(names, name)
	}
	sort.Strings(names)
	leaves := 0
	for _, name := range names {
		p := pkgs[name]
		if p.main {
			continue
		}
		if _, ok := notLeaves[name]; ok {
			continue
		}
		leaf := true
		for _, imp := range p.imports {
			q, internal := pkgs[imp]
			_, exempt := notLeaves[imp]
			if !internal || q.main || exempt {
				leaf = false
				t.Errorf("%s is under internal/ but imports %s, which is not an internal leaf: a subsystem belongs in a public package", name, imp)
			}
		}
		if leaf {
			leaves++
		}
	}
	for name := range notLeaves {
		if _, ok := pkgs[name]; !ok {
			t.Errorf("notLeaves lists %s, which is no longer a package: remove it", name)
		}
	}
	t.Logf("%d internal leaves", leaves)
}
