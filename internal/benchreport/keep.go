// Rerunning some suites: the rows of the others are read back from the
// report being replaced.

package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// kept is what a partial run (-only) takes from the report it replaces.
type kept struct {
	groups  []group // the rows of its "All rows" table, one group per command
	date    string  // its machine table's date, load and suites rows
	load    string
	partial string
	// its start-up target rows and section, which the "All rows" table
	// does not hold (the comparison is no go test suite): kept as text
	// when the partial run leaves the start-up comparison out
	startupRows, startupSection string
}

var (
	allRowsLine = regexp.MustCompile("^\\| `(Benchmark[^`]+)` \\| (—|\\d+) \\| ([^|]*) \\| ([^|]*) \\| ([^|]*) \\| ([^|]*) \\| `(.+)` \\|$")
	otherMetric = regexp.MustCompile(`^(-?[\d,]+(?:\.\d+)?) (\S+)$`)
)

// parseReport reads back a report written by render: the rows of its "All
// rows" table and its machine's date and load. The figures are those the
// table shows, rounded as num rounds them (three significant digits below
// 100, whole numbers above), which is what the report shows anyway.
func parseReport(text string) (kept, error) {
	var k kept
	byCmd := map[string]int{}
	in := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "| date | "):
			k.date = strings.TrimSuffix(strings.TrimPrefix(line, "| date | "), " |")
		case strings.HasPrefix(line, "| suites | "):
			k.partial = strings.TrimSuffix(strings.TrimPrefix(line, "| suites | "), " |")
		case strings.HasPrefix(line, "| load average (1, 5, 15 min) before / after | "):
			k.load = strings.TrimSuffix(strings.TrimPrefix(line, "| load average (1, 5, 15 min) before / after | "), " |")
		case line == "## All rows":
			in = true
		case in && strings.HasPrefix(line, "## "):
			in = false
		case in:
			m := allRowsLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			r, err := parseRow(m)
			if err != nil {
				return kept{}, fmt.Errorf("report row %q: %w", line, err)
			}
			cmd := m[7]
			i, ok := byCmd[cmd]
			if !ok {
				i = len(k.groups)
				byCmd[cmd] = i
				k.groups = append(k.groups, group{command: cmd})
			}
			k.groups[i].rows = append(k.groups[i].rows, r)
		}
	}
	if len(k.groups) == 0 {
		return kept{}, fmt.Errorf("no \"All rows\" table")
	}
	k.startupRows, k.startupSection = keptStartup(text)
	return k, nil
}

// parseRow reads one row of the "All rows" table (allRowsLine's groups).
func parseRow(m []string) (row, error) {
	r := row{name: m[1]}
	if m[2] == "—" {
		r.skipped = strings.TrimPrefix(strings.TrimSpace(m[6]), "pending: ")
		return r, nil
	}
	var err error
	if r.iters, err = strconv.ParseInt(m[2], 10, 64); err != nil {
		return row{}, err
	}
	for i, unit := range []string{"ns/op", "B/op", "allocs/op"} {
		cell := strings.TrimSpace(m[3+i])
		if cell == "—" {
			continue // no -benchmem figures
		}
		v, err := number(cell)
		if err != nil {
			return row{}, fmt.Errorf("%s: %w", unit, err)
		}
		r.metrics = append(r.metrics, metric{v, unit})
	}
	if other := strings.TrimSpace(m[6]); other != "" {
		for _, f := range strings.Split(other, ", ") {
			mm := otherMetric.FindStringSubmatch(f)
			if mm == nil {
				return row{}, fmt.Errorf("metric %q", f)
			}
			v, err := number(mm[1])
			if err != nil {
				return row{}, err
			}
			r.metrics = append(r.metrics, metric{v, mm[2]})
		}
	}
	return r, nil
}

func number(s string) (float64, error) {
	return strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
}

// merge returns the groups of a partial run: the kept report's, each
// replaced by the group of the rerun suite with the same command, and the
// rerun groups no kept group had, at the end.
func (k kept) merge(rerun []group) []group {
	out := make([]group, 0, len(k.groups)+len(rerun))
	used := make([]bool, len(rerun))
	for _, g := range k.groups {
		for i, n := range rerun {
			if n.command == g.command {
				g, used[i] = n, true
				break
			}
		}
		out = append(out, g)
	}
	for i, n := range rerun {
		if !used[i] {
			out = append(out, n)
		}
	}
	return out
}

// note is the machine table's suites row of a partial run of the suites
// in only that keeps the rest of k.
func (k kept) note(only string) string {
	n := fmt.Sprintf("this run: %s; every other row as in the report of %s (load before / after %s)", only, k.date, k.load)
	if k.partial != "" {
		n += ", whose own suites row said: " + k.partial
	}
	return n
}
