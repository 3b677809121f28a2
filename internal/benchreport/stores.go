// The SQLite store against the memory store, measured in the same run.

package main

import (
	"fmt"
	"strconv"
	"strings"
)

// storePairs are the benchmarks run on both stores, the memory store first
// in the same go test process: the SQLite row's reference.
var storePairs = []struct{ what, prefix string }{
	{"delegated call", "BenchmarkDelegatedCall/"},
	{"2,000-member parallel team", "BenchmarkTeamStore/members=2000/"},
	{"10,000-member parallel team", "BenchmarkTeamStore/members=10000/"},
}

// storeRatio is the SQLite row's figure over the memory row's for unit.
func storeRatio(groups []group, prefix, unit string) (float64, bool) {
	m, _, ok1 := find(groups, prefix+"store=memory")
	s, _, ok2 := find(groups, prefix+"store=sqlite")
	if !ok1 || !ok2 || m.skipped != "" || s.skipped != "" {
		return 0, false
	}
	mv, ok1 := m.get(unit)
	sv, ok2 := s.get(unit)
	if !ok1 || !ok2 || mv <= 0 {
		return 0, false
	}
	return sv / mv, true
}

// storeTargets are the SQLite targets judged on a ratio to the memory
// store in the same run.
func storeTargets(b *strings.Builder, groups []group) {
	prefix := "BenchmarkTeamStore/members=2000/"
	r, ok := storeRatio(groups, prefix, "ns/op")
	if !ok {
		fmt.Fprintf(b, "| 2,000-member team: SQLite within 2× of the memory store (same run) | `%sstore=*` | — | — | ≤ 2× | not run |\n", prefix)
		return
	}
	cpu := "—"
	if c, ok := storeRatio(groups, prefix, "cpu-ns/op"); ok {
		cpu = strconv.FormatFloat(c, 'f', 2, 64) + "×"
	}
	status := "**missed**"
	if r <= 2 {
		status = "met"
	}
	fmt.Fprintf(b, "| 2,000-member team: SQLite within 2× of the memory store (same run) | `%sstore=*` | %.2f× | %s | ≤ 2× | %s |\n", prefix, r, cpu, status)
}

// storeSection is the table of SQLite against memory, one row per pair.
func storeSection(b *strings.Builder, groups []group) {
	var lines []string
	cmd := ""
	for _, p := range storePairs {
		m, _, ok1 := find(groups, p.prefix+"store=memory")
		s, c, ok2 := find(groups, p.prefix+"store=sqlite")
		if !ok1 || !ok2 || m.skipped != "" || s.skipped != "" {
			continue
		}
		cmd = c
		cell := func(r row, unit string, show func(float64) string) string {
			if v, ok := r.get(unit); ok {
				return show(v)
			}
			return "—"
		}
		ratio := func(unit string) string {
			if v, ok := storeRatio(groups, p.prefix, unit); ok {
				return strconv.FormatFloat(v, 'f', 2, 64) + "×"
			}
			return "—"
		}
		mb := func(v float64) string { return num(v) + " MB" }
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s | %s |", p.what,
			cell(m, "ns/op", dur), cell(s, "ns/op", dur), ratio("ns/op"), ratio("cpu-ns/op"),
			cell(m, "peak-rss-MB", mb), cell(s, "peak-rss-MB", mb), cell(s, "allocs/op", num)))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "## SQLite store vs memory store (same run)\n\n")
	fmt.Fprintf(b, "Each workload runs on the memory store (`--db :memory:`), then on the default SQLite store (a file in a temporary directory, default options), back to back in one `go test` process; the ratios compare the two rows of that run. ")
	fmt.Fprintf(b, "Peak RSS is the process's resident set size sampled every millisecond during a run that starts from a collected heap (it counts the SQLite page cache, outside the Go heap, and the test binary itself).\n\n")
	fmt.Fprintf(b, "| workload | memory | SQLite | SQLite ÷ memory (wall) | SQLite ÷ memory (CPU) | memory peak RSS | SQLite peak RSS | SQLite allocs/op |\n|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(b, "%s\n\nCommand: `%s`\n\n", strings.Join(lines, "\n"), cmd)
}
