// Merging a start-up run alone into a report made by a whole run.

package main

import (
	"errors"
	"strings"
)

// mergeStartup returns report with its start-up target rows and section
// replaced by those of groups (added where render puts them when the
// report has none); when says when they ran. The rest of the report is
// left as it is.
func mergeStartup(report string, groups []group, when string) (string, error) {
	var rows, section strings.Builder
	startupTargets(&rows, groups)
	startupSection(&section, groups, when)
	return spliceStartup(report, rows.String(), section.String())
}

// spliceStartup returns report with its start-up target rows and section
// replaced by rows and section (text as render writes it).
func spliceStartup(report, rows, section string) (string, error) {
	lines := strings.SplitAfter(report, "\n")
	// The start-up section goes first: the targets table is above it, so
	// its indexes stay valid.
	if at := indexLine(lines, 0, startupHeading+"\n"); at >= 0 {
		end := at + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "## ") {
			end++
		}
		lines = append(lines[:at:at], lines[end:]...)
	}
	targets := indexLine(lines, 0, "## Targets\n")
	if targets < 0 {
		return "", errors.New("the report has no ## Targets section")
	}
	start := targets + 1
	for start < len(lines) && !strings.HasPrefix(lines[start], "|") {
		start++
	}
	end := start
	var table []string
	for ; end < len(lines) && strings.HasPrefix(lines[end], "|"); end++ {
		if !strings.HasPrefix(lines[end], "| start-up:") {
			table = append(table, lines[end])
		}
	}
	if start == end {
		return "", errors.New("the report's ## Targets section has no table")
	}
	var out strings.Builder
	out.WriteString(strings.Join(lines[:start], ""))
	out.WriteString(strings.Join(table, ""))
	out.WriteString(rows)
	rest := lines[end:]
	if len(rest) > 0 && rest[0] == "\n" { // the blank line after the table
		out.WriteString("\n")
		rest = rest[1:]
	}
	out.WriteString(section)
	out.WriteString(strings.Join(rest, ""))
	return out.String(), nil
}

// indexLine is the index of the first of lines from i on that is line, or -1.
func indexLine(lines []string, i int, line string) int {
	for ; i < len(lines); i++ {
		if lines[i] == line {
			return i
		}
	}
	return -1
}

// keptStartup returns the start-up target rows and section of a report
// ("" when it has none), for a partial run (-only) that does not run the
// start-up comparison: they are carried over as they are.
func keptStartup(report string) (rows, section string) {
	lines := strings.SplitAfter(report, "\n")
	var r strings.Builder
	inTargets := false
	for _, l := range lines {
		switch {
		case l == "## Targets\n":
			inTargets = true
		case strings.HasPrefix(l, "## "):
			inTargets = false
		case inTargets && strings.HasPrefix(l, "| start-up:"):
			r.WriteString(l)
		}
	}
	if at := indexLine(lines, 0, startupHeading+"\n"); at >= 0 {
		end := at + 1
		for end < len(lines) && !strings.HasPrefix(lines[end], "## ") {
			end++
		}
		section = strings.Join(lines[at:end], "")
	}
	return r.String(), section
}
