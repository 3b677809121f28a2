package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/session"
)

// Bounds of the tool input shown with a question: enough to decide on
// (a command, a file's first lines, an edit), not a screenful of JSON.
const (
	inputLines     = 12  // lines of one value
	inputLineRunes = 200 // runes of one line
	inputFields    = 8
)

// describeInput shows the fields of a tool input a person decides on,
// one "key: value" each, a text value line by line, indented by indent.
// The control characters in it are made visible by the writer it goes to.
func describeInput(raw json.RawMessage, indent string) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(raw, &in) != nil {
		if s := strings.TrimSpace(string(raw)); s != "" && s != "null" {
			return indent + cutRunes(s, inputLineRunes) + "\n"
		}
		return ""
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	// What one decides on first (the command, the file), then the rest.
	first := []string{"command", "file_path", "path", "url", "pattern"}
	rank := func(k string) int {
		if i := slices.Index(first, k); i >= 0 {
			return i
		}
		return len(first)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, k := range keys {
		if i == inputFields {
			fmt.Fprintf(&b, "%s… %d more fields\n", indent, len(keys)-i)
			break
		}
		var s string
		if json.Unmarshal(in[k], &s) != nil {
			s = string(in[k]) // not a string: as JSON
		}
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		if len(lines) == 1 {
			fmt.Fprintf(&b, "%s%s: %s\n", indent, k, cutRunes(lines[0], inputLineRunes))
			continue
		}
		fmt.Fprintf(&b, "%s%s: (%d lines)\n", indent, k, len(lines))
		for j, l := range lines {
			if j == inputLines {
				fmt.Fprintf(&b, "%s  … %d more lines\n", indent, len(lines)-j)
				break
			}
			fmt.Fprintf(&b, "%s  │ %s\n", indent, cutRunes(l, inputLineRunes))
		}
	}
	return b.String()
}

func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// maxPathDepth bounds the walk up the session tree (a loop in a broken
// store ends there).
const maxPathDepth = 64

// agentPath names the agent of a request by its place in the session
// tree: the agents of the request's session and of its ancestors, root
// first ("lead › coder › writer"). A session the store cannot give ends
// the walk; the request's own agent is always last.
func agentPath(ctx context.Context, st session.Store, sessionID, agent string) string {
	var names []string
	for id := sessionID; id != "" && len(names) < maxPathDepth && st != nil; {
		s, err := st.GetSession(ctx, id)
		if err != nil {
			break
		}
		names = append(names, s.AgentName)
		id = s.ParentID
	}
	slices.Reverse(names)
	if len(names) == 0 || names[len(names)-1] != agent {
		names = append(names, agent)
	}
	return strings.Join(names, " › ")
}

// requestPath is agentPath for a broker's request.
func requestPath(st session.Store) func(approval.Request) string {
	return func(r approval.Request) string {
		return agentPath(context.Background(), st, r.SessionID, r.Agent)
	}
}
