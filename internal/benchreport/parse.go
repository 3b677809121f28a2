// Parsing go test -bench output.

package main

import (
	"bufio"
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

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
