// Command benchreport runs agentpool's benchmarks and writes BENCHMARKS.md:
// every benchmark row with its figures and the exact command that produced
// it, the side-by-side with eino (bench/compare) and its ratio, the targets
// and whether they are met, and the machine the figures come from.
//
//	go run ./internal/benchreport [-benchtime 1s] [-o BENCHMARKS.md] [-raw bin/bench]
//
// With -parse, nothing runs: the raw outputs saved by an earlier run in the
// -raw directory are read again (to regenerate the report).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
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
	common := func(extra ...string) []string {
		// -v prints why a benchmark skipped (a pending dependency).
		return append([]string{"test", "-v", "-run=^$", "-bench=.", "-benchmem", "-benchtime=" + benchtime}, extra...)
	}
	return []suite{
		{name: "bench", dir: ".", args: common("./bench")},
		{name: "micro", dir: ".", args: common("./id", "./event")},
		// bench/compare builds agentpool through a replace directive, so
		// every module agentpool requires must be in its go.sum too;
		// -mod=mod lets the go command add what a newer agentpool needs
		// (downloaded through the module proxy) instead of failing.
		{name: "compare", dir: "bench/compare", args: common("-mod=mod", ".")},
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
	var (
		benchtime = flag.String("benchtime", "1s", "go test -benchtime for every suite")
		outPath   = flag.String("o", "BENCHMARKS.md", "report to write")
		rawDir    = flag.String("raw", "bin/bench", "directory for the raw go test outputs")
		parseOnly = flag.Bool("parse", false, "do not run: regenerate the report from the raw outputs in -raw")
		goCmd     = flag.String("go", "go", "the go command")
	)
	flag.Parse()
	if err := run(*benchtime, *outPath, *rawDir, *goCmd, *parseOnly); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(benchtime, outPath, rawDir, goCmd string, parseOnly bool) error {
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return err
	}
	ss := suites(benchtime)
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
	if err := os.WriteFile(outPath, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %s\n", outPath)
	if failed {
		return fmt.Errorf("some benchmark commands failed (see above); the report has what ran")
	}
	return nil
}

// ---------------------------------------------------------------------------
// Parsing go test -bench output

type metric struct {
	value float64
	unit  string
}

type row struct {
	name    string // without the -GOMAXPROCS suffix
	pkg     string
	iters   int64
	metrics []metric
	skipped string // reason, when the benchmark skipped
}

func (r row) get(unit string) (float64, bool) {
	for _, m := range r.metrics {
		if m.unit == unit {
			return m.value, true
		}
	}
	return 0, false
}

type group struct {
	command string
	rows    []row
	cpu     string
}

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.+)$`)
	skipLine  = regexp.MustCompile(`^\s*--- SKIP: (Benchmark\S+?)(?:-\d+)?(?:\s|$)`)
)

func parse(command string, out []byte) group {
	g := group{command: command}
	pkg := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lastLog := "" // the last b.Log/b.Skip line ("    file.go:12: why"); -v prints it before --- SKIP
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "pkg: "):
			pkg = strings.TrimPrefix(line, "pkg: ")
			lastLog = ""
		case strings.HasPrefix(line, "cpu: "):
			g.cpu = strings.TrimSpace(strings.TrimPrefix(line, "cpu: "))
		case strings.HasPrefix(line, " ") && strings.Contains(line, ".go:"):
			lastLog = strings.TrimSpace(line)
			if _, after, ok := strings.Cut(lastLog, ": "); ok {
				lastLog = after
			}
		case skipLine.MatchString(line):
			m := skipLine.FindStringSubmatch(line)
			reason := lastLog
			if reason == "" {
				reason = "skipped"
			}
			g.rows = append(g.rows, row{name: m[1], pkg: pkg, skipped: reason})
			lastLog = ""
		default:
			m := benchLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			lastLog = ""
			iters, _ := strconv.ParseInt(m[2], 10, 64)
			r := row{name: m[1], pkg: pkg, iters: iters}
			f := strings.Fields(m[3])
			for i := 0; i+1 < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					break
				}
				r.metrics = append(r.metrics, metric{v, f[i+1]})
			}
			g.rows = append(g.rows, r)
		}
	}
	return g
}

func find(groups []group, name string) (row, string, bool) {
	for _, g := range groups {
		for _, r := range g.rows {
			if r.name == name {
				return r, g.command, true
			}
		}
	}
	return row{}, "", false
}

// ---------------------------------------------------------------------------
// Machine

type machine struct {
	goVersion  string
	nproc      int
	gomaxprocs int
	cpu        string
	osArch     string
	loadBefore string
	loadAfter  string
	date       string
}

func machineInfo(goCmd string) machine {
	m := machine{nproc: runtime.NumCPU(), gomaxprocs: runtime.GOMAXPROCS(0), osArch: runtime.GOOS + "/" + runtime.GOARCH}
	if out, err := exec.Command(goCmd, "version").Output(); err == nil {
		m.goVersion = strings.TrimSpace(string(out))
	} else {
		m.goVersion = runtime.Version()
	}
	if out, err := exec.Command("nproc").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			m.nproc = n
		}
	}
	m.cpu = cpuModel()
	return m
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func loadavg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func (m machine) String() string {
	return fmt.Sprintf("go=%s\nnproc=%d\ngomaxprocs=%d\ncpu=%s\nos=%s\nload_before=%s\nload_after=%s\ndate=%s\n",
		m.goVersion, m.nproc, m.gomaxprocs, m.cpu, m.osArch, m.loadBefore, m.loadAfter, m.date)
}

func parseMachine(s string) machine {
	var m machine
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch k {
		case "go":
			m.goVersion = v
		case "nproc":
			m.nproc, _ = strconv.Atoi(v)
		case "gomaxprocs":
			m.gomaxprocs, _ = strconv.Atoi(v)
		case "cpu":
			m.cpu = v
		case "os":
			m.osArch = v
		case "load_before":
			m.loadBefore = v
		case "load_after":
			m.loadAfter = v
		case "date":
			m.date = v
		}
	}
	return m
}

// ---------------------------------------------------------------------------
// Rendering

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return commas(int64(math.Round(v)))
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(ns/1e9, 'f', 2, 64) + " s"
	case ns >= 1e6:
		return strconv.FormatFloat(ns/1e6, 'f', 2, 64) + " ms"
	case ns >= 1e3:
		return strconv.FormatFloat(ns/1e3, 'f', 1, 64) + " µs"
	}
	return strconv.FormatFloat(ns, 'f', 0, 64) + " ns"
}

type target struct {
	what   string
	bench  string
	unit   string
	limit  float64
	atMost bool // figure must be <= limit (else >=)
	show   func(float64) string
	cpu    string // the CPU-time metric that goes with unit, if any
}

func targets() []target {
	perSec := func(v float64) string { return num(v) + "/s" }
	return []target{
		{"delegated call, memory store: time", "BenchmarkDelegatedCall/store=memory", "ns/op", 20000, true, dur, "cpu-ns/op"},
		{"delegated call, memory store: allocations", "BenchmarkDelegatedCall/store=memory", "allocs/op", 200, true, num, ""},
		{"event pipeline, spawn wrapper (bare/depth=1)", "BenchmarkEventPipeline/bare/depth=1", "events/s", 1e6, false, perSec, "cpu-events/s"},
		{"event pipeline, spawn wrapper + processor, no subscriber (bare+processor/lean)", "BenchmarkEventPipeline/bare+processor/lean/depth=1", "events/s", 1e6, false, perSec, "cpu-events/s"},
		{"event pipeline, spawn wrapper + processor with a subscriber: projection and Changes (bare+processor/projected)", "BenchmarkEventPipeline/bare+processor/projected/depth=1", "events/s", 1e6, false, perSec, "cpu-events/s"},
		{"event pipeline, full pool path (agent loop, recorder, processor, memory store)", "BenchmarkEventPipeline/pool/store=memory", "events/s", 1e6, false, perSec, "cpu-events/s"},
		{"10,000-member parallel team: time", "BenchmarkFanOut/members=10000", "ns/op", 2e9, true, dur, "cpu-ns/op"},
		{"10,000-member parallel team: peak heap", "BenchmarkFanOut/members=10000", "peak-heap-MB", 500, true, func(v float64) string { return num(v) + " MB" }, ""},
		{"SQLite: persisted events/s (batch of 1)", "BenchmarkPersistEvents/store=sqlite/batch=1", "events/s", 50000, false, perSec, ""},
	}
}

func render(m machine, groups []group, notes string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	w("# Benchmarks\n\n")
	w("Generated by `make bench` (`go run ./internal/benchreport`); do not edit by hand. ")
	w("Every figure below comes from the command in its row, run on the machine described here. ")
	w("Raw `go test` outputs are kept in `bin/bench/` (not committed).\n\n")

	w("## Machine\n\n| | |\n|---|---|\n")
	w("| Go | `%s` |\n| CPU | %s |\n| nproc | %d (GOMAXPROCS %d) |\n| OS/arch | %s |\n", m.goVersion, m.cpu, m.nproc, m.gomaxprocs, m.osArch)
	if m.date != "" {
		w("| date | %s |\n", m.date)
	}
	if m.loadBefore != "" {
		w("| load average (1, 5, 15 min) before / after | %s / %s |\n", m.loadBefore, m.loadAfter)
	}
	w("\nThe machine may be shared: other processes running during the benchmarks (see the load average; above the number of cores they compete for it) ")
	w("stretch the wall-clock figures, so the CPU-time figures (`cpu-ns/op`, `cpu-events/s`) are given next to them where it matters.\n\n")

	// Targets.
	w("## Targets\n\n")
	w("Status is judged on the wall-clock figure. The CPU-time column is the process's user+system CPU per op (every goroutine, the garbage collector included): ")
	w("on this shared machine it is the better estimate of the work itself; a parallel workload can finish in about half its CPU time on 2 cores.\n\n")
	w("| target | benchmark | figure | CPU-time figure | limit | status |\n|---|---|---|---|---|---|\n")
	for _, t := range targets() {
		r, _, ok := find(groups, t.bench)
		limit := "≥ " + t.show(t.limit)
		if t.atMost {
			limit = "≤ " + t.show(t.limit)
		}
		switch {
		case !ok:
			w("| %s | `%s` | — | — | %s | not run |\n", t.what, t.bench, limit)
		case r.skipped != "":
			w("| %s | `%s` | — | — | %s | %s |\n", t.what, t.bench, limit, pendingText(r.skipped))
		default:
			v, ok := r.get(t.unit)
			if !ok {
				w("| %s | `%s` | — | — | %s | no %s metric |\n", t.what, t.bench, limit, t.unit)
				continue
			}
			cpu := "—"
			if c, ok := r.get(t.cpu); ok && t.cpu != "" {
				cpu = t.show(c)
			}
			met := v >= t.limit
			if t.atMost {
				met = v <= t.limit
			}
			status := "**missed**"
			if met {
				status = "met"
			}
			w("| %s | `%s` | %s | %s | %s | %s |\n", t.what, t.bench, t.show(v), cpu, limit, status)
		}
	}
	ratioRow(&b, groups)
	w("\n")

	// Comparison.
	w("## Side by side: delegated call, agentpool vs eino (one benchmark run)\n\n")
	w("Same work on both sides: a parent agent on a scripted/fake model calls a worker agent as a tool once; ")
	w("the worker answers \"done\"; the parent answers \"finished\"; every event is consumed. ")
	w("agentpool: `ask_worker` worker tool, child session with the full lifecycle (spawn start/end, wrapped events), ")
	w("every event through the pool's recorder and the session-tree processor, messages and events stored in the memory store, streamed part events (18 events). ")
	w("eino v0.7.36: `adk.NewChatModelAgent` + `adk.NewAgentTool` with `EmitInternalEvents: true`, runner iterator drained ")
	w("(message streams read to the end in the streaming variant), no store (4 events).\n\n")
	w("| side | ns/op | CPU ns/op | B/op | allocs/op | events/op | × agentpool (wall) | × agentpool (CPU) | command |\n|---|---|---|---|---|---|---|---|---|\n")
	ap, _, apOK := find(groups, "BenchmarkDelegatedCall/agentpool")
	for _, name := range []string{"agentpool", "eino", "eino-streaming"} {
		r, cmd, ok := find(groups, "BenchmarkDelegatedCall/"+name)
		if !ok || r.skipped != "" {
			continue
		}
		ns, _ := r.get("ns/op")
		bop, _ := r.get("B/op")
		al, _ := r.get("allocs/op")
		ev, _ := r.get("events/op")
		cpu, hasCPU := r.get("cpu-ns/op")
		ratio, cpuRatio, cpuS := "—", "—", "—"
		if hasCPU {
			cpuS = dur(cpu)
		}
		if apOK {
			if apns, _ := ap.get("ns/op"); apns > 0 {
				ratio = strconv.FormatFloat(ns/apns, 'f', 2, 64) + "×"
			}
			if apc, ok := ap.get("cpu-ns/op"); ok && apc > 0 && hasCPU {
				cpuRatio = strconv.FormatFloat(cpu/apc, 'f', 2, 64) + "×"
			}
		}
		w("| %s | %s | %s | %s | %s | %s | %s | %s | `%s` |\n", name, dur(ns), cpuS, num(bop), num(al), num(ev), ratio, cpuRatio, cmd)
	}
	w("\n")

	// Curves.
	curve(&b, groups, "Fan-out: parallel team of N scripted members", "BenchmarkFanOut/members=", []string{"ns/op", "cpu-ns/op", "ns/member", "peak-heap-MB", "heap-growth-MB", "B/op", "allocs/op"})
	curve(&b, groups, "Depth: chain a0 → a1 → … (each asks the next as a worker)", "BenchmarkDepth/depth=", []string{"ns/op", "cpu-ns/op", "ns/level", "B/op", "allocs/op"})
	curve(&b, groups, "Emission latency: child Emit → root consumer (wrapper, recorder, processor, memory store)", "BenchmarkEmitLatency/children=", []string{"p50-ns", "p99-ns", "ns/op", "allocs/op"})

	// Everything.
	w("## All rows\n\n| benchmark | iterations | ns/op | B/op | allocs/op | other | command |\n|---|---|---|---|---|---|---|\n")
	for _, g := range groups {
		for _, r := range g.rows {
			if r.skipped != "" {
				w("| `%s` | — | — | — | — | %s | `%s` |\n", r.name, pendingText(r.skipped), g.command)
				continue
			}
			ns, _ := r.get("ns/op")
			bop, hasB := r.get("B/op")
			al, _ := r.get("allocs/op")
			var other []string
			for _, mt := range r.metrics {
				switch mt.unit {
				case "ns/op", "B/op", "allocs/op":
					continue
				}
				other = append(other, num(mt.value)+" "+mt.unit)
			}
			bs, as := "—", "—"
			if hasB {
				bs, as = num(bop), num(al)
			}
			w("| `%s` | %d | %s | %s | %s | %s | `%s` |\n", r.name, r.iters, num(ns), bs, as, strings.Join(other, ", "), g.command)
		}
	}
	var pending []string
	for _, g := range groups {
		for _, r := range g.rows {
			if r.skipped != "" {
				pending = append(pending, fmt.Sprintf("- `%s`: %s\n", r.name, strings.TrimPrefix(pendingText(r.skipped), "pending: ")))
			}
		}
	}
	if len(pending) > 0 {
		w("\n## Pending\n\n%s", strings.Join(pending, ""))
	}
	if notes = strings.TrimSpace(notes); notes != "" {
		w("\n## Notes\n\nWritten by hand in `%s` (copied here by `make bench`): what the figures mean, what the profiles show.\n\n%s\n", notesPath, notes)
	}
	return b.String()
}

// notesPath is the hand-written part of BENCHMARKS.md.
const notesPath = "bench/NOTES.md"

// pendingText is a skip reason as shown: "pending: ..." (once).
func pendingText(reason string) string {
	return "pending: " + strings.TrimPrefix(reason, "pending: ")
}

func ratioRow(b *strings.Builder, groups []group) {
	ap, _, ok := find(groups, "BenchmarkDelegatedCall/agentpool")
	if !ok || ap.skipped != "" {
		fmt.Fprintf(b, "| agentpool ≥ 5× faster than eino's agent-as-tool | `bench/compare` | — | — | ≥ 5× | not run |\n")
		return
	}
	apns, _ := ap.get("ns/op")
	best := math.Inf(1)
	bestName := ""
	for _, n := range []string{"eino", "eino-streaming"} {
		if r, _, ok := find(groups, "BenchmarkDelegatedCall/"+n); ok && r.skipped == "" {
			if v, _ := r.get("ns/op"); v > 0 && v < best {
				best, bestName = v, n
			}
		}
	}
	if bestName == "" || apns == 0 {
		fmt.Fprintf(b, "| agentpool ≥ 5× faster than eino's agent-as-tool | `bench/compare` | — | — | ≥ 5× | not run |\n")
		return
	}
	ratio := best / apns
	status := "**missed**"
	if ratio >= 5 {
		status = "met"
	}
	cpuRatio := "—"
	if apc, ok := ap.get("cpu-ns/op"); ok && apc > 0 {
		if r, _, ok := find(groups, "BenchmarkDelegatedCall/"+bestName); ok {
			if c, ok := r.get("cpu-ns/op"); ok {
				cpuRatio = strconv.FormatFloat(c/apc, 'f', 2, 64) + "×"
			}
		}
	}
	fmt.Fprintf(b, "| agentpool ≥ 5× faster than eino's agent-as-tool (vs the faster eino variant, %s) | `BenchmarkDelegatedCall/*` in `bench/compare` | %.2f× | %s | ≥ 5× | %s |\n", bestName, ratio, cpuRatio, status)
}

func curve(b *strings.Builder, groups []group, title, prefix string, units []string) {
	var rows []row
	cmd := ""
	for _, g := range groups {
		for _, r := range g.rows {
			if strings.HasPrefix(r.name, prefix) && r.skipped == "" {
				rows = append(rows, r)
				cmd = g.command
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "## %s\n\n| %s | %s |\n|---|%s\n", title, strings.TrimSuffix(prefix[strings.LastIndex(prefix, "/")+1:], "="), strings.Join(units, " | "), strings.Repeat("---|", len(units)))
	for _, r := range rows {
		cells := make([]string, len(units))
		for i, u := range units {
			v, ok := r.get(u)
			switch {
			case !ok:
				cells[i] = "—"
			case u == "ns/op" || u == "cpu-ns/op" || strings.HasSuffix(u, "-ns") || u == "ns/member" || u == "ns/level":
				cells[i] = dur(v)
			default:
				cells[i] = num(v)
			}
		}
		fmt.Fprintf(b, "| %s | %s |\n", strings.TrimPrefix(r.name, prefix), strings.Join(cells, " | "))
	}
	fmt.Fprintf(b, "\nCommand: `%s`\n\n", cmd)
}
