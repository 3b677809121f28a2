// The start-up comparison: `agentpool version` against `opencode --version`,
// whole processes (exec to exit), wall time and peak memory.

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// startupRuns is how many times each program runs (alternating, so
	// that a change of load hits both alike); the figures are medians.
	startupRuns = 15
	// opencodeBin is the OpenCode binary tests/node/clients installs
	// (npm ci there), the program agentpool's start is compared with.
	opencodeBin = "tests/node/clients/node_modules/opencode-linux-x64/bin/opencode"
	// startupBin is the front users type, startupLightBin the command line
	// it execs for every command but version and the help, as make build
	// makes them.
	startupBin      = "bin/agentpool"
	startupLightBin = "bin/agentpool-light"
)

// Start-up targets (issue 32).
const (
	startupWallRatio = 100.0 // opencode's wall time / agentpool's, at least
	startupRSSRatio  = 20.0  // opencode's max RSS / agentpool's, at least
	startupInitMS    = 5.0   // the sum of agentpool's package inits, at most
	startupRSSMB     = 20.0  // agentpool version's max RSS, at most
)

// startupBuildArgs build startupBin and startupLightBin with the release
// flags of make build.
func startupBuildArgs() []string {
	return []string{"build", "-trimpath", "-ldflags=-s -w", "-o", "bin/", "./cmd/agentpool", "./cmd/agentpool-light"}
}

// startupProgram is one command line the comparison runs.
type startupProgram struct {
	name string // BenchmarkStartup/<name>
	path string // relative to the module root
	args []string
}

// The programs, run in turn in each round. The run --help rows are the
// start of every other command: the front, its exec, and the command
// line's own start (inits, command tree) without the command's work; the
// same without the front shows what the front costs it.
var (
	apVersion    = startupProgram{"agentpool-version", startupBin, []string{"version"}}
	ocVersion    = startupProgram{"opencode-version", opencodeBin, []string{"--version"}}
	apRunHelp    = startupProgram{"agentpool-run-help", startupBin, []string{"run", "--help"}}
	lightRunHelp = startupProgram{"agentpool-light-run-help", startupLightBin, []string{"run", "--help"}}
)

// procFigures are one process's wall time (start to wait4) and peak
// resident set (wait4's rusage).
type procFigures struct {
	wall   time.Duration
	rssKiB int64
}

// spawnArg, as benchreport's first argument, makes it the helper runProc
// measures through (spawnMain).
const spawnArg = "-startup-spawn"

// runProc runs path with args to its end and returns its figures and
// stderr. It runs it through a fresh benchreport process (spawnMain), not
// from this one: Linux starts a child's max RSS at the RSS of the process
// that forked it (the child shares its parent's memory until exec, and
// exec keeps the high-water mark), so a figure taken from here would be at
// least this process's own peak (tens of MB after the other suites), not
// the program's.
func runProc(path string, args, env []string) (procFigures, []byte, error) {
	self, err := os.Executable()
	if err != nil {
		return procFigures{}, nil, err
	}
	c := exec.Command(self, append([]string{spawnArg, path}, args...)...)
	c.Env = env
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		return procFigures{}, stderr.Bytes(), fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var wallNS, rss int64
	if _, err := fmt.Sscanf(stdout.String(), "%d %d", &wallNS, &rss); err != nil {
		return procFigures{}, nil, fmt.Errorf("%s: the helper printed %q: %v", path, stdout.String(), err)
	}
	return procFigures{wall: time.Duration(wallNS), rssKiB: rss}, stderr.Bytes(), nil
}

// spawnMain is benchreport started by runProc: it runs args[0] with the
// rest of args (stdout to /dev/null, stderr passed on), and prints its
// wall time (start to wait4) in ns and its max RSS (wait4's rusage, KiB
// on Linux). Being a small fresh process, its own RSS, the floor of the
// child's figure, stays a few MB (a Go hello world measures 2 MB so).
func spawnMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "benchreport: "+spawnArg+" needs a program")
		return 2
	}
	c := exec.Command(args[0], args[1:]...)
	c.Stdout, c.Stderr = nil, os.Stderr // stdout: /dev/null
	start := time.Now()
	err := c.Run()
	wall := time.Since(start)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, errors.New("no rusage from wait4"))
		return 1
	}
	fmt.Printf("%d %d\n", wall.Nanoseconds(), ru.Maxrss)
	return 0
}

// initSum is the sum of the clock times of GODEBUG=inittrace=1's lines
// ("init pkg @0.5 ms, 0.12 ms clock, ...").
func initSum(trace []byte) float64 {
	var sum float64
	for _, line := range strings.Split(string(trace), "\n") {
		if !strings.HasPrefix(line, "init ") {
			continue
		}
		_, rest, ok := strings.Cut(line, ", ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) >= 2 && f[1] == "ms" {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func median[T int64 | float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// startupCommand is the command line the start-up rows show.
func startupCommand(goCmd string) string {
	return fmt.Sprintf("CGO_ENABLED=0 %s %s; then %d × (%s version; %s --version; %s run --help; %s run --help), alternating, "+
		"and %d × GODEBUG=inittrace=1 (%s version; %s run --help)",
		goCmd, strings.Join(quoteAll(startupBuildArgs()), " "), startupRuns, startupBin, opencodeBin, startupBin, startupLightBin,
		startupRuns, startupBin, startupBin)
}

// measureStartup builds the front and the light CLI and runs the
// comparison, from the module root. Its output is in go test -bench form
// (parse reads it): a BenchmarkStartup/<name> line per program (wall and
// max RSS medians; opencode-version skipped, with the reason, without the
// opencode binary), then BenchmarkStartup/agentpool-init and
// agentpool-run-help-init, the medians of the init sums.
func measureStartup(goCmd string) ([]byte, error) {
	var out bytes.Buffer
	build := exec.Command(goCmd, startupBuildArgs()...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s and %s: %v\n%s", startupBin, startupLightBin, err, msg)
	}
	env := os.Environ()
	progs := []startupProgram{apVersion, ocVersion, apRunHelp, lightRunHelp}
	if _, err := os.Stat(opencodeBin); err != nil {
		progs = slices.Delete(progs, 1, 2)
	}
	runs := make(map[string][]procFigures)
	for range startupRuns {
		for _, p := range progs {
			path, err := filepath.Abs(p.path)
			if err != nil {
				return nil, err
			}
			r, _, err := runProc(path, p.args, env)
			if err != nil {
				return nil, err
			}
			runs[p.name] = append(runs[p.name], r)
		}
	}
	// The init sums: of the front alone (version), and of the front and
	// the command line it execs (run --help: GODEBUG is passed on).
	traces := []struct {
		name string
		prog startupProgram
	}{{"agentpool-init", apVersion}, {"agentpool-run-help-init", apRunHelp}}
	inits := make([][]float64, len(traces))
	traced := append(slices.Clone(env), "GODEBUG=inittrace=1")
	for range startupRuns {
		for i, tr := range traces {
			path, err := filepath.Abs(tr.prog.path)
			if err != nil {
				return nil, err
			}
			_, trace, err := runProc(path, tr.prog.args, traced)
			if err != nil {
				return nil, err
			}
			inits[i] = append(inits[i], initSum(trace))
		}
	}
	fmt.Fprintf(&out, "pkg: startup\n")
	for _, p := range []startupProgram{apVersion, ocVersion, apRunHelp, lightRunHelp} {
		rs, ok := runs[p.name]
		if !ok {
			fmt.Fprintf(&out, "    startup.go:1: no %s (run npm ci in tests/node/clients)\n--- SKIP: BenchmarkStartup/%s\n", opencodeBin, p.name)
			continue
		}
		var walls []time.Duration
		var rss []int64
		for _, r := range rs {
			walls = append(walls, r.wall)
			rss = append(rss, r.rssKiB)
		}
		fmt.Fprintf(&out, "BenchmarkStartup/%s\t%d\t%d ns/op\t%.1f maxrss-MB\t%d min-ns\t%d max-ns\n",
			p.name, len(rs), median(walls).Nanoseconds(), float64(median(rss))/1024, slices.Min(walls).Nanoseconds(), slices.Max(walls).Nanoseconds())
	}
	for i, tr := range traces {
		fmt.Fprintf(&out, "BenchmarkStartup/%s\t%d\t%.3f init-ms\t%.3f min-init-ms\n", tr.name, len(inits[i]), median(inits[i]), slices.Min(inits[i]))
	}
	return out.Bytes(), nil
}

// startupFigures are the medians of a start-up group.
type startupFigures struct {
	apWall, ocWall, apRSS, ocRSS, initMS float64
	haveAP, haveOC, haveInit             bool
	ocSkipped                            string
	// The start of every other command: through the front (run) and
	// without it (light); runInitMS sums both programs' inits.
	runWall, runRSS, lightWall, lightRSS, runInitMS float64
	haveRun, haveRunInit                            bool
}

func startupOf(groups []group) startupFigures {
	var f startupFigures
	if r, _, ok := find(groups, "BenchmarkStartup/"+apVersion.name); ok && r.skipped == "" {
		f.apWall, _ = r.get("ns/op")
		f.apRSS, _ = r.get("maxrss-MB")
		f.haveAP = true
	}
	if r, _, ok := find(groups, "BenchmarkStartup/"+ocVersion.name); ok {
		if r.skipped != "" {
			f.ocSkipped = r.skipped
		} else {
			f.ocWall, _ = r.get("ns/op")
			f.ocRSS, _ = r.get("maxrss-MB")
			f.haveOC = true
		}
	}
	if r, _, ok := find(groups, "BenchmarkStartup/agentpool-init"); ok && r.skipped == "" {
		f.initMS, f.haveInit = r.get("init-ms")
	}
	run, _, okRun := find(groups, "BenchmarkStartup/"+apRunHelp.name)
	light, _, okLight := find(groups, "BenchmarkStartup/"+lightRunHelp.name)
	if okRun && okLight && run.skipped == "" && light.skipped == "" {
		f.runWall, _ = run.get("ns/op")
		f.runRSS, _ = run.get("maxrss-MB")
		f.lightWall, _ = light.get("ns/op")
		f.lightRSS, _ = light.get("maxrss-MB")
		f.haveRun = true
	}
	if r, _, ok := find(groups, "BenchmarkStartup/agentpool-run-help-init"); ok && r.skipped == "" {
		f.runInitMS, f.haveRunInit = r.get("init-ms")
	}
	return f
}

func status(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// startupTargets writes the start-up rows of the targets table.
func startupTargets(b *strings.Builder, groups []group) {
	f := startupOf(groups)
	const bench = "`BenchmarkStartup/*` (make bench, see Start-up)"
	if !f.haveAP {
		fmt.Fprintf(b, "| start-up: `agentpool version` vs `opencode --version` | %s | — | — | ≥ %.0f× wall, ≥ %.0f× memory | not run |\n", bench, startupWallRatio, startupRSSRatio)
		return
	}
	if f.haveOC && f.apWall > 0 && f.apRSS > 0 {
		w := f.ocWall / f.apWall
		m := f.ocRSS / f.apRSS
		fmt.Fprintf(b, "| start-up: `agentpool version` faster than `opencode --version` (wall, medians) | %s | %.0f× | — | ≥ %.0f× | %s |\n", bench, w, startupWallRatio, status(w >= startupWallRatio))
		fmt.Fprintf(b, "| start-up: `agentpool version` smaller than `opencode --version` (max RSS, medians) | %s | %.1f× | — | ≥ %.0f× | %s |\n", bench, m, startupRSSRatio, status(m >= startupRSSRatio))
	} else {
		fmt.Fprintf(b, "| start-up: `agentpool version` vs `opencode --version` | %s | — | — | ≥ %.0f× wall, ≥ %.0f× memory | %s |\n", bench, startupWallRatio, startupRSSRatio, pendingText(f.ocSkipped))
	}
	fmt.Fprintf(b, "| start-up: `agentpool version` max RSS | %s | %.1f MB | — | ≤ %.0f MB | %s |\n", bench, f.apRSS, startupRSSMB, status(f.apRSS <= startupRSSMB))
	if f.haveInit {
		fmt.Fprintf(b, "| start-up: sum of package inits (`GODEBUG=inittrace=1 agentpool version`, median) | %s | %.2f ms | — | ≤ %.0f ms | %s |\n", bench, f.initMS, startupInitMS, status(f.initMS <= startupInitMS))
	}
}

// startupHeading opens the start-up section (mergeStartup finds it by it).
const startupHeading = "## Start-up: `agentpool version` vs `opencode --version` (same run)"

// startupSection writes the start-up comparison; when, if not empty, says
// when it ran (a run apart from the rest of the report's).
func startupSection(b *strings.Builder, groups []group, when string) {
	f := startupOf(groups)
	_, cmd, ok := find(groups, "BenchmarkStartup/agentpool-version")
	if !ok || !f.haveAP {
		return
	}
	fmt.Fprintf(b, "%s\n\n", startupHeading)
	if when != "" {
		fmt.Fprintf(b, "%s\n\n", when)
	}
	fmt.Fprintf(b, "Whole processes, from fork to wait4, %d runs of each, alternating; medians. ", startupRuns)
	fmt.Fprintf(b, "Wall: what a shell waits; max RSS: wait4's rusage. `bin/agentpool` is the front users type: it answers `version` and the top-level help itself "+
		"and execs `bin/agentpool-light` (the CLI without Temporal, gRPC nor the OpenTelemetry SDK; `agentpool-full` has them) for every other command. "+
		"The `run --help` rows are that path: the start of every other command, without the command's own work.\n\n")
	fmt.Fprintf(b, "| program | wall (median) | max RSS (median) | × agentpool (wall) | × agentpool (RSS) |\n|---|---|---|---|---|\n")
	fmt.Fprintf(b, "| `agentpool version` | %s | %.1f MB | 1× | 1× |\n", dur(f.apWall), f.apRSS)
	if f.haveOC {
		fmt.Fprintf(b, "| `opencode --version` | %s | %.1f MB | %.0f× | %.1f× |\n", dur(f.ocWall), f.ocRSS, f.ocWall/f.apWall, f.ocRSS/f.apRSS)
	} else {
		fmt.Fprintf(b, "| `opencode --version` | — | — | — | %s |\n", pendingText(f.ocSkipped))
	}
	if f.haveRun {
		fmt.Fprintf(b, "| `agentpool run --help` (front, then agentpool-light) | %s | %.1f MB | %.1f× | %.1f× |\n", dur(f.runWall), f.runRSS, f.runWall/f.apWall, f.runRSS/f.apRSS)
		fmt.Fprintf(b, "| `agentpool-light run --help` (no front) | %s | %.1f MB | %.1f× | %.1f× |\n", dur(f.lightWall), f.lightRSS, f.lightWall/f.apWall, f.lightRSS/f.apRSS)
	}
	if f.haveInit {
		fmt.Fprintf(b, "\nPackage inits (sum of the `GODEBUG=inittrace=1` lines, median of %d runs): `agentpool version` %.2f ms", startupRuns, f.initMS)
		if f.haveRunInit {
			fmt.Fprintf(b, "; `agentpool run --help`, the front's and agentpool-light's, %.2f ms", f.runInitMS)
		}
		fmt.Fprintf(b, ".\n")
	}
	if f.haveRun {
		fmt.Fprintf(b, "\nWhat the front costs every other command (run --help with the front minus without it, medians of the same run): %s wall.\n",
			signedDur(f.runWall-f.lightWall))
	}
	fmt.Fprintf(b, "\nCommand: `%s`\n\n", cmd)
}

// signedDur is dur with a sign.
func signedDur(ns float64) string {
	if ns < 0 {
		return "−" + dur(-ns)
	}
	return "+" + dur(ns)
}
