package bounded

import (
	"bytes"
	"encoding/json"
)

// CheckJSON measures a JSON document against the budget's depth and node
// bounds (every value and key is a node) and spends its nodes of the
// budget, without building it. Malformed JSON is left to the decoder that
// follows: CheckJSON stops where it stops understanding and returns nil.
func (b *Budget) CheckJSON(data []byte) error {
	lim := b.lim
	dec := json.NewDecoder(bytes.NewReader(data))
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed JSON: its decoder reports it
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			depth--
			continue
		}
		b.nodes++
		if b.nodes > lim.Nodes {
			return errorf(lineAt(data, dec.InputOffset()), Nodes, lim.Nodes, "too many JSON values (more than %d, keys included)", lim.Nodes)
		}
		if d, ok := tok.(json.Delim); ok && (d == '{' || d == '[') {
			depth++
			if depth > lim.Depth {
				return errorf(lineAt(data, dec.InputOffset()), Depth, int64(lim.Depth), "JSON nested too deeply (more than %d levels)", lim.Depth)
			}
		}
	}
}

// lineAt is the 1-based line of offset off in data.
func lineAt(data []byte, off int64) int {
	return 1 + bytes.Count(data[:min(max(off, 0), int64(len(data)))], []byte("\n"))
}
