package main

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

const sampleStartup = `pkg: startup
BenchmarkStartup/agentpool-version	15	8000000 ns/op	12.5 maxrss-MB	7000000 min-ns	9000000 max-ns
BenchmarkStartup/opencode-version	15	1600000000 ns/op	250.0 maxrss-MB	1500000000 min-ns	1700000000 max-ns
BenchmarkStartup/agentpool-run-help	15	30000000 ns/op	15.0 maxrss-MB	28000000 min-ns	40000000 max-ns
BenchmarkStartup/agentpool-light-run-help	15	27000000 ns/op	14.9 maxrss-MB	25000000 min-ns	35000000 max-ns
BenchmarkStartup/agentpool-init	15	4.200 init-ms	3.900 min-init-ms
BenchmarkStartup/agentpool-run-help-init	15	14.000 init-ms	12.000 min-init-ms
`

// The start-up rows: ratios of opencode's medians to agentpool's against
// the targets, and the section with both programs.
func TestStartupReport(t *testing.T) {
	groups := []group{parse("the command", []byte(sampleStartup))}
	var b strings.Builder
	startupTargets(&b, groups)
	startupSection(&b, groups, "")
	out := b.String()
	for _, want := range []string{
		"faster than `opencode --version` (wall, medians) | `BenchmarkStartup/*` (make bench, see Start-up) | 200× | — | ≥ 100× | met |",
		"smaller than `opencode --version` (max RSS, medians) | `BenchmarkStartup/*` (make bench, see Start-up) | 20.0× | — | ≥ 20× | met |",
		"| start-up: `agentpool version` max RSS | `BenchmarkStartup/*` (make bench, see Start-up) | 12.5 MB | — | ≤ 20 MB | met |",
		"| 4.20 ms | — | ≤ 5 ms | met |",
		"| `agentpool version` | 8.00 ms | 12.5 MB | 1× | 1× |",
		"| `opencode --version` | 1.60 s | 250.0 MB | 200× | 20.0× |",
		"| `agentpool run --help` (front, then agentpool-light) | 30.00 ms | 15.0 MB | 3.8× | 1.2× |",
		"| `agentpool-light run --help` (no front) | 27.00 ms | 14.9 MB | 3.4× | 1.2× |",
		"`agentpool version` 4.20 ms; `agentpool run --help`, the front's and agentpool-light's, 14.00 ms.",
		"(run --help with the front minus without it, medians of the same run): +3.00 ms wall.",
		"Command: `the command`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// Without the opencode binary the comparison is reported as skipped, with
// why, and agentpool's own figures still are.
func TestStartupReportWithoutOpencode(t *testing.T) {
	raw := `pkg: startup
BenchmarkStartup/agentpool-version	15	30000000 ns/op	25.0 maxrss-MB	7000000 min-ns	9000000 max-ns
    startup.go:1: no tests/node/clients/node_modules/opencode-linux-x64/bin/opencode (run npm ci in tests/node/clients)
--- SKIP: BenchmarkStartup/opencode-version
`
	groups := []group{parse("cmd", []byte(raw))}
	var b strings.Builder
	startupTargets(&b, groups)
	startupSection(&b, groups, "")
	out := b.String()
	for _, want := range []string{
		"pending: no tests/node/clients/node_modules/opencode-linux-x64/bin/opencode (run npm ci in tests/node/clients)",
		"| 25.0 MB | — | ≤ 20 MB | **missed** |",
		"| `agentpool version` | 30.00 ms | 25.0 MB |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "≥ 100× | met") {
		t.Errorf("a ratio without opencode:\n%s", out)
	}
}

func TestInitSumAndMedian(t *testing.T) {
	trace := "init internal/bytealg @0 ms, 0 ms clock, 0 bytes, 0 allocs\n" +
		"init runtime @0.020 ms, 0.10 ms clock, 0 bytes, 0 allocs\n" +
		"agentpool 0.1.0-dev\n" +
		"init github.com/x/y @1.5 ms, 1.25 ms clock, 4096 bytes, 3 allocs\n"
	if got := initSum([]byte(trace)); got < 1.349 || got > 1.351 {
		t.Errorf("initSum = %v, want 1.35", got)
	}
	if got := median([]time.Duration{5, 1, 3}); got != 3 {
		t.Errorf("median of 3 = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 4 = %v", got)
	}
}

// TestMain lets the test binary be runProc's helper, as benchreport is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == spawnArg {
		os.Exit(spawnMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// TestRunProcRSSNotFlooredByCaller: a program's max RSS is its own, not
// the measuring process's. Measured straight from a process that holds
// 128 MB, wait4 would report at least that for any child.
func TestRunProcRSSNotFlooredByCaller(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true program on PATH")
	}
	ballast := make([]byte, 128<<20)
	for i := range ballast {
		ballast[i] = 1 // resident
	}
	r, _, err := runProc(truePath, nil, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	if r.rssKiB <= 0 || r.rssKiB > 64<<10 {
		t.Errorf("true's max RSS %d KiB; want its own (a few MB), not the 128 MB caller's", r.rssKiB)
	}
	if r.wall <= 0 {
		t.Errorf("wall %v", r.wall)
	}
	runtime.KeepAlive(ballast)
}

// TestMergeStartup: a start-up run alone replaces the start-up rows and
// section of a report (or adds them where render puts them) and leaves the
// rest as it was; merging again changes nothing more.
func TestMergeStartup(t *testing.T) {
	groups := []group{parse("the command", []byte(sampleStartup))}
	const head = "# Benchmarks\n\n## Targets\n\nStatus...\n\n| target | benchmark |\n|---|---|\n| delegated call | x |\n"
	const tail = "## SQLite store vs memory store (same run)\n\nfigures\n\n## Notes\n\nhand-written\n"
	old := head + "| start-up: old row | y |\n\n" + startupHeading + "\n\nold section\n\n" + tail
	got, err := mergeStartup(old, groups, "Run on its own, then.")
	if err != nil {
		t.Fatal(err)
	}
	var rows, section strings.Builder
	startupTargets(&rows, groups)
	startupSection(&section, groups, "Run on its own, then.")
	want := head + rows.String() + "\n" + section.String() + tail
	if got != want {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
	if again, err := mergeStartup(got, groups, "Run on its own, then."); err != nil || again != got {
		t.Errorf("merging again changed the report (%v):\n%s", err, again)
	}
	// A report made before the start-up comparison existed.
	fresh, err := mergeStartup(head+"\n"+tail, groups, "Run on its own, then.")
	if err != nil || fresh != want {
		t.Errorf("merged into a report without start-up rows (%v):\n%s", err, fresh)
	}
	if _, err := mergeStartup("# Benchmarks\n\nno targets\n", groups, ""); err == nil {
		t.Error("a report without targets: no error")
	}
}
