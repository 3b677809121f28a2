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
// at all; so the document is parsed again, one more line at a time from
// the reported line on, and the first prefix that fails with the very same
// error holds the problem on its last line. reported is the parser's line
// (0 when it gave none), used when the search finds nothing.
func problemLine(err error, data []byte, reported int) int {
	fallback := max(reported, 1)
	if len(data) > maxSyntaxSearchBytes {
		return fallback
	}
	want := err.Error()
	// A context begins at or before its problem, so no earlier prefix can
	// hold it. Parser errors give the context's line 0-based: start one
	// line earlier to be safe.
	start := max(reported-1, 1)
	end := 0 // offset in data just past line n
	for n := 1; n <= maxSyntaxSearchLines && end < len(data); n++ {
		next := bytes.IndexByte(data[end:], '\n')
		if next < 0 {
			end = len(data)
		} else {
			end += next + 1
		}
		if n < start {
			continue
		}
		if e := decodeAll(data[:end]); e != nil && e.Error() == want {
			return n
		}
	}
	return fallback
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
