package main

import (
	"os"
	"strings"
	"testing"
)

// allRows returns the lines of the "All rows" table of a report.
func allRows(report string) []string {
	_, after, _ := strings.Cut(report, "## All rows\n")
	before, _, _ := strings.Cut(after, "\n## ")
	var out []string
	for _, l := range strings.Split(before, "\n") {
		if strings.HasPrefix(l, "| `Benchmark") {
			out = append(out, l)
		}
	}
	return out
}

// TestParseReportRoundTrip: the rows a report shows read back into groups
// that render the same report (the figures as shown: num's rounding).
func TestParseReportRoundTrip(t *testing.T) {
	groups := []group{
		{command: "go test -v '-run=^$' -bench=. -benchmem -benchtime=1s ./bench", rows: []row{
			{name: "BenchmarkDelegatedCall/store=memory", iters: 55102, metrics: []metric{{21716, "ns/op"}, {12141, "B/op"}, {95, "allocs/op"}, {29754, "cpu-ns/op"}, {18, "events/op"}}},
			{name: "BenchmarkFanOut/members=10", iters: 4998, metrics: []metric{{236320, "ns/op"}, {63227, "B/op"}, {486, "allocs/op"}, {0.02, "heap-growth-MB"}, {1.25, "peak-heap-MB"}}},
			{name: "BenchmarkPending", skipped: "pending: AGENTPOOL_TEST_POSTGRES is not set"},
		}},
		{command: "go test -v '-run=^$' '-bench=^BenchmarkScale' -benchmem -benchtime=1x ./server/agui", rows: []row{
			{name: "BenchmarkScale/agui/sessions=1000/paced-5ms", iters: 1, metrics: []metric{{2981429780, "ns/op"}, {284128224, "B/op"}, {1182553, "allocs/op"}, {24874, "cpu-ns/event"}, {161350320, "p99-ns"}, {-3.5, "skew"}}},
			{name: "BenchmarkNoMem", iters: 7, metrics: []metric{{119, "ns/op"}}},
		}},
	}
	m := machine{goVersion: "go1.26", nproc: 2, gomaxprocs: 2, cpu: "x", osArch: "linux/amd64", date: "2026-12-02 05:55 UTC", loadBefore: "1 2 3", loadAfter: "4 5 6"}
	want := render(m, groups, "notes")
	k, err := parseReport(want)
	if err != nil {
		t.Fatal(err)
	}
	if k.date != m.date || k.load != "1 2 3 / 4 5 6" {
		t.Errorf("date %q load %q", k.date, k.load)
	}
	if got := render(m, k.groups, "notes"); got != want {
		t.Errorf("the report read back renders differently:\n%s\nwant:\n%s", got, want)
	}

	// A rerun suite replaces the group with its command; a new one is
	// added at the end.
	rerun := group{command: groups[1].command, rows: []row{{name: "BenchmarkScale/agui/sessions=1000/paced-5ms", iters: 1, metrics: []metric{{1e9, "ns/op"}}}}}
	extra := group{command: "go test ./new", rows: []row{{name: "BenchmarkNew", iters: 1, metrics: []metric{{5, "ns/op"}}}}}
	merged := k.merge([]group{rerun, extra})
	if len(merged) != 3 || merged[0].command != groups[0].command || len(merged[1].rows) != 1 || merged[2].command != extra.command {
		t.Errorf("merge: %+v", merged)
	}
}

// TestParseCommittedReport: the committed BENCHMARKS.md reads back whole:
// its rows render the same "All rows" table.
func TestParseCommittedReport(t *testing.T) {
	data, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Skip("no BENCHMARKS.md:", err)
	}
	k, err := parseReport(string(data))
	if err != nil {
		t.Fatal(err)
	}
	want := allRows(string(data))
	got := allRows(render(machine{}, k.groups, ""))
	if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d rows read back render as\n%s\nwant\n%s", len(got), strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestKeptStartup: a partial run that leaves the start-up comparison out
// carries the report's start-up rows and section over as they were.
func TestKeptStartup(t *testing.T) {
	data, err := os.ReadFile("../../BENCHMARKS.md")
	if err != nil {
		t.Skip("no BENCHMARKS.md:", err)
	}
	report := string(data)
	rows, section := keptStartup(report)
	if rows == "" || section == "" {
		t.Fatalf("no start-up rows (%d bytes) or section (%d bytes) found", len(rows), len(section))
	}
	without, err := spliceStartup(report, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(without, "| start-up:") || strings.Contains(without, startupHeading) {
		t.Fatal("the start-up rows or section are still there")
	}
	back, err := spliceStartup(without, rows, section)
	if err != nil {
		t.Fatal(err)
	}
	if back != report {
		t.Error("the report with its start-up rows and section put back differs")
	}
}
