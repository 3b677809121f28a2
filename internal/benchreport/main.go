// Command benchreport runs agentpool's benchmarks and writes BENCHMARKS.md:
// every benchmark row with its figures and the exact command that produced
// it, the side-by-side with eino (bench/compare) and its ratio, the targets
// and whether they are met, and the machine the figures come from.
//
//	go run ./internal/benchreport [-benchtime 1s] [-o BENCHMARKS.md] [-raw bin/bench]
//
// With -parse, nothing runs: the raw outputs saved by an earlier run in the
// -raw directory are read again (to regenerate the report). With -startup,
// only the start-up comparison runs (about a minute) and its section and
// target rows are printed, the report left as it is; with -startup -merge,
// they also replace those of the -o report (the rest of it kept). With
// -only, only the named suites run (comma-separated: bench, protocol,
// micro, scale, compare, temporal, startup) and the rows of the others are
// read back from the report being replaced (-o), whose date and load the
// machine table names for them.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// suite is one benchmark command.
type suite struct {
	name string   // raw output file stem
	dir  string   // working directory, relative to the module root
	args []string // go test arguments
}

func suites(benchtime string) []suite {
	benchOf := func(pattern string, extra ...string) []string {
		// -v prints why a benchmark skipped (a pending dependency).
		return append([]string{"test", "-v", "-run=^$", "-bench=" + pattern, "-benchmem", "-benchtime=" + benchtime}, extra...)
	}
	common := func(extra ...string) []string { return benchOf(".", extra...) }
	return []suite{
		{name: "bench", dir: ".", args: common("./bench")},
		// The protocol servers' encoding and whole-run benchmarks live
		// in-package, beside the unexported wire types they exercise.
		{name: "protocol", dir: ".", args: benchOf("^BenchmarkProtocol", "./server/acp", "./server/agui")},
		{name: "micro", dir: ".", args: common("./id", "./event")},
		// 1,000 concurrent runs through the AG-UI and OpenCode servers on
		// loopback, 100 concurrent ACP sessions on one connection: seconds
		// per op, so one op each.
		{name: "scale", dir: ".", args: []string{"test", "-v", "-run=^$", "-bench=^BenchmarkScale", "-benchmem", "-benchtime=1x", "./server/agui", "./server/opencode", "./server/acp"}},
		// bench/compare builds agentpool through a replace directive, so
		// every module agentpool requires must be in its go.sum too;
		// -mod=mod lets the go command add what a newer agentpool needs
		// (downloaded through the module proxy) instead of failing.
		{name: "compare", dir: "bench/compare", args: common("-mod=mod", ".")},
		// Child sessions on the Temporal engine (the dev server of
		// AGENTPOOL_TEMPORAL_BIN, worker processes) and in process, side
		// by side; each op is a root and its 10 children, seconds on
		// Temporal: three ops each (after one to warm the workers),
		// whatever -benchtime says.
		{name: "temporal", dir: ".", args: []string{"test", "-v", "-run=^$", "-bench=^BenchmarkChildren$", "-benchmem", "-benchtime=3x", "./durable"}},
	}
}

// command is the shell form of a suite's command, as run from the module root.
func (s suite) command(goCmd string) string {
	c := goCmd + " " + strings.Join(quoteAll(s.args), " ")
	if s.dir != "." {
		c = "cd " + s.dir + " && " + c
	}
	return c
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$*?[]{}() '\"|&;<>") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == spawnArg {
		os.Exit(spawnMain(os.Args[2:]))
	}
	var (
		benchtime = flag.String("benchtime", "1s", "go test -benchtime for every suite")
		outPath   = flag.String("o", "BENCHMARKS.md", "report to write")
		rawDir    = flag.String("raw", "bin/bench", "directory for the raw go test outputs")
		parseOnly = flag.Bool("parse", false, "do not run: regenerate the report from the raw outputs in -raw")
		goCmd     = flag.String("go", "go", "the go command")
		startOnly = flag.Bool("startup", false, "only run the start-up comparison and print its section")
		only      = flag.String("only", "", "run only these suites (comma-separated); keep the other rows of the report -o")
		merge     = flag.Bool("merge", false, "with -startup: also write its rows and section into the -o report, the rest kept")
	)
	flag.Parse()
	if *merge && !*startOnly {
		fmt.Fprintln(os.Stderr, "benchreport: -merge goes with -startup")
		os.Exit(2)
	}
	if *startOnly && *only != "" {
		fmt.Fprintln(os.Stderr, "benchreport: -startup runs the start-up comparison alone; -only names suites: choose one")
		os.Exit(2)
	}
	if *startOnly {
		into := ""
		if *merge {
			into = *outPath
		}
		if err := startupOnly(*goCmd, *rawDir, into); err != nil {
			fmt.Fprintln(os.Stderr, "benchreport:", err)
			os.Exit(1)
		}
		return
	}
	if *only != "" && *parseOnly {
		fmt.Fprintln(os.Stderr, "benchreport: -only runs suites, -parse runs none: choose one")
		os.Exit(2)
	}
	if err := run(*benchtime, *outPath, *rawDir, *goCmd, *parseOnly, *only); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(benchtime, outPath, rawDir, goCmd string, parseOnly bool, only string) error {
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return err
	}
	ss := suites(benchtime)
	runStartup := true
	var keep *kept
	if only != "" {
		var err error
		if ss, runStartup, err = selectSuites(ss, only); err != nil {
			return err
		}
		old, err := os.ReadFile(outPath)
		if err != nil {
			return fmt.Errorf("-only keeps the other rows of %s: %w", outPath, err)
		}
		k, err := parseReport(string(old))
		if err != nil {
			return fmt.Errorf("%s: %w", outPath, err)
		}
		keep = &k
	}
	var groups []group
	machine := machineInfo(goCmd)
	if parseOnly {
		data, err := os.ReadFile(filepath.Join(rawDir, "machine.txt"))
		if err == nil {
			machine = parseMachine(string(data))
		}
	} else {
		machine.loadBefore = loadavg()
		machine.date = time.Now().UTC().Format("2006-01-02 15:04 UTC")
	}
	failed := false
	for _, s := range ss {
		rawPath := filepath.Join(rawDir, s.name+".txt")
		cmdline := s.command(goCmd)
		var out []byte
		if parseOnly {
			var err error
			if out, err = os.ReadFile(rawPath); err != nil {
				return err
			}
		} else {
			fmt.Printf("$ %s\n", cmdline)
			var buf bytes.Buffer
			buf.WriteString("$ " + cmdline + "\n")
			c := exec.Command(goCmd, s.args...)
			c.Dir = s.dir
			c.Stdout = io.MultiWriter(os.Stdout, &buf)
			c.Stderr = io.MultiWriter(os.Stderr, &buf)
			if err := c.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "benchreport: %s: %v\n", cmdline, err)
				failed = true
			}
			if err := os.WriteFile(rawPath, buf.Bytes(), 0o644); err != nil {
				return err
			}
			out = buf.Bytes()
		}
		// The first line of a raw output is the command that produced it.
		if first, rest, ok := bytes.Cut(out, []byte("\n")); ok && bytes.HasPrefix(first, []byte("$ ")) {
			cmdline, out = string(first[2:]), rest
		}
		groups = append(groups, parse(cmdline, out))
	}
	// The start-up comparison: not a go test suite, its raw output in the
	// same form.
	if !runStartup {
		// (-only without it)
	} else if g, err := startupGroup(goCmd, rawDir, parseOnly); err != nil {
		fmt.Fprintf(os.Stderr, "benchreport: start-up: %v\n", err)
		failed = true
	} else {
		groups = append(groups, g)
	}
	if keep != nil {
		groups = keep.merge(groups)
		machine.partial = keep.note(only)
	}
	if !parseOnly {
		machine.loadAfter = loadavg()
		if err := os.WriteFile(filepath.Join(rawDir, "machine.txt"), []byte(machine.String()), 0o644); err != nil {
			return err
		}
	}
	notes, err := os.ReadFile(notesPath)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	report := render(machine, groups, string(notes))
	if keep != nil && !runStartup && keep.startupRows != "" {
		if report, err = spliceStartup(report, keep.startupRows, keep.startupSection); err != nil {
			return err
		}
	}
	if err := os.WriteFile(outPath, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", outPath)
	if failed {
		return fmt.Errorf("some benchmark commands failed (see above); the report has what ran")
	}
	return nil
}

// startupGroup measures the start-up comparison (or reads its raw output
// with parseOnly) and saves its raw output as startup.txt.
func startupGroup(goCmd, rawDir string, parseOnly bool) (group, error) {
	rawPath := filepath.Join(rawDir, "startup.txt")
	cmdline := startupCommand(goCmd)
	var out []byte
	var err error
	if parseOnly {
		if out, err = os.ReadFile(rawPath); os.IsNotExist(err) {
			return group{}, nil // raw outputs from before the comparison
		} else if err != nil {
			return group{}, err
		}
		if first, rest, ok := bytes.Cut(out, []byte("\n")); ok && bytes.HasPrefix(first, []byte("$ ")) {
			cmdline, out = string(first[2:]), rest
		}
	} else {
		fmt.Printf("$ %s\n", cmdline)
		if out, err = measureStartup(goCmd); err != nil {
			return group{}, err
		}
		os.Stdout.Write(out)
		if err := os.WriteFile(rawPath, append([]byte("$ "+cmdline+"\n"), out...), 0o644); err != nil {
			return group{}, err
		}
	}
	return parse(cmdline, out), nil
}

// startupOnly runs the start-up comparison alone and prints its target
// rows and section; with mergeInto, it also writes them into that report
// (mergeStartup).
func startupOnly(goCmd, rawDir, mergeInto string) error {
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return err
	}
	before, date := loadavg(), time.Now().UTC().Format("2006-01-02 15:04 UTC")
	g, err := startupGroup(goCmd, rawDir, false)
	if err != nil {
		return err
	}
	when := fmt.Sprintf("Run on its own (`go run ./internal/benchreport -startup`), %s, load average (1, 5, 15 min) before / after: %s / %s; "+
		"the Machine table's date and load are those of the rest of the report.", date, before, loadavg())
	var b strings.Builder
	fmt.Fprintf(&b, "\n| target | benchmark | figure | CPU-time figure | limit | status |\n|---|---|---|---|---|---|\n")
	startupTargets(&b, []group{g})
	b.WriteString("\n")
	startupSection(&b, []group{g}, when)
	fmt.Print(b.String())
	if mergeInto == "" {
		return nil
	}
	old, err := os.ReadFile(mergeInto)
	if err != nil {
		return err
	}
	merged, err := mergeStartup(string(old), []group{g}, when)
	if err != nil {
		return fmt.Errorf("%s: %w", mergeInto, err)
	}
	if err := os.WriteFile(mergeInto, []byte(merged), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote the start-up rows and section into %s\n", mergeInto)
	return nil
}

// selectSuites keeps the suites named in only (comma-separated) and says
// whether the start-up comparison is one of them.
func selectSuites(all []suite, only string) ([]suite, bool, error) {
	var out []suite
	startup := false
	for _, name := range strings.Split(only, ",") {
		name = strings.TrimSpace(name)
		if name == "startup" {
			startup = true
			continue
		}
		found := false
		for _, s := range all {
			if s.name == name {
				out, found = append(out, s), true
			}
		}
		if !found {
			names := []string{"startup"}
			for _, s := range all {
				names = append(names, s.name)
			}
			return nil, false, fmt.Errorf("-only: no suite %q (suites: %s)", name, strings.Join(names, ", "))
		}
	}
	return out, startup, nil
}
