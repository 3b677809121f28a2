package config

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"
)

// Limits of the search for the line of a syntax error: past them the
// parser's own line is reported.
const (
	maxSyntaxSearchLines = 5000
	maxSyntaxSearchBytes = 1 << 20
)

// problemLine finds the line of a YAML syntax error. The parser reports
// the line where its enclosing context began (a list item misplaced on line
// 4 of a mapping that starts on line 1 is reported "at line 1"), or no line
// at all; so the document is parsed again, cut after a line, and the first
// line whose prefix fails with the very same error holds the problem.
// reported is the parser's line (0 when it gave none), used when the search
// finds nothing.
//
// Lines are tried at growing distances from the reported line (1, 2, 4,
// ...), then halved between the last prefix that passed and the first
// that failed: a few parses whatever the distance, where trying every line
// parsed a 1 MiB manifest thousands of times (minutes). A prefix holding
// the problem fails with it, one cut before fails otherwise, so both
// searches find the same line.
func problemLine(err error, data []byte, reported int) int {
	fallback := max(reported, 1)
	if len(data) > maxSyntaxSearchBytes {
		return fallback
	}
	want := err.Error()
	// ends[n-1] is the offset in data just past line n.
	var ends []int
	for end := 0; end < len(data) && len(ends) < maxSyntaxSearchLines; {
		next := bytes.IndexByte(data[end:], '\n')
		if next < 0 {
			end = len(data)
		} else {
			end += next + 1
		}
		ends = append(ends, end)
	}
	fails := func(n int) bool {
		e := decodeAll(data[:ends[n-1]])
		return e != nil && e.Error() == want
	}
	// A context begins at or before its problem, so no earlier prefix can
	// hold it. Parser errors give the context's line 0-based: start one
	// line earlier to be safe.
	start := max(reported-1, 1)
	if start > len(ends) {
		return fallback
	}
	passed, failed := start-1, 0 // line passed is known to pass (0: none)
	for step := 0; failed == 0; step = max(1, 2*step) {
		n := min(start+step, len(ends))
		if fails(n) {
			failed = n
		} else if n == len(ends) {
			return fallback
		} else {
			passed = n
		}
	}
	for failed-passed > 1 {
		mid := passed + (failed-passed)/2
		if fails(mid) {
			failed = mid
		} else {
			passed = mid
		}
	}
	return failed
}

// decodeAll decodes every YAML document in data, returning the first error
// (io.EOF is no error).
func decodeAll(data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
