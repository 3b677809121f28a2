// Package a2atest holds what the A2A tests (server/a2a, external/a2aagent)
// share: reading tasks and checking the session trees a run stored.
package a2atest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentpool/agentpool/session"
)

// MetaKey is server/a2a's metadata key (not imported: a test of this
// package's users may be in package a2a).
const MetaKey = "agentpool"

// PartsText is the text of parts.
func PartsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case a2a.TextPart:
			b.WriteString(v.Text)
		case *a2a.TextPart:
			b.WriteString(v.Text)
		}
	}
	return b.String()
}

// Text is the text of m ("" for nil).
func Text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return PartsText(m.Parts)
}

// sessionIn is the agentpool session id of metadata meta.
func sessionIn(meta map[string]any) string {
	m, _ := meta[MetaKey].(map[string]any)
	s, _ := m["session_id"].(string)
	return s
}

// SessionOf is the agentpool session of a finished task (its final
// status's metadata).
func SessionOf(t testing.TB, task *a2a.Task) string {
	t.Helper()
	if s := sessionIn(task.Metadata); s != "" {
		return s
	}
	t.Fatalf("task %s names no agentpool session (metadata %v)", task.ID, task.Metadata)
	return ""
}

// SessionOfEvents is the agentpool session named by a stream's events.
func SessionOfEvents(t testing.TB, evs []a2a.Event) string {
	t.Helper()
	for _, ev := range evs {
		if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			if s := sessionIn(su.Metadata); s != "" {
				return s
			}
		}
	}
	t.Fatal("no status update names the agentpool session")
	return ""
}

// Session reads session id from st.
func Session(t testing.TB, st session.Store, id string) session.Session {
	t.Helper()
	s, err := st.GetSession(context.Background(), id)
	if err != nil {
		t.Fatalf("session %s: %v", id, err)
	}
	return s
}

// CheckTree checks that the tree of root in st has sessions of the agents
// named (root's agent first), each completed.
func CheckTree(t testing.TB, st session.Store, root string, agents ...string) []session.Session {
	t.Helper()
	ctx := context.Background()
	var all []session.Session
	queue := []string{root}
	for len(queue) > 0 {
		s, err := st.GetSession(ctx, queue[0])
		if err != nil {
			t.Fatalf("session %s: %v", queue[0], err)
		}
		queue = queue[1:]
		all = append(all, s)
		kids, err := st.ListSessions(ctx, session.ListOptions{ParentID: s.ID})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range kids {
			queue = append(queue, k.ID)
		}
	}
	var names []string
	for _, s := range all {
		names = append(names, s.AgentName)
		if s.Status != session.StatusCompleted && s.Status != session.StatusIdle {
			t.Errorf("session %s (%s): status %s", s.ID, s.AgentName, s.Status)
		}
	}
	if len(all) == 0 || all[0].AgentName != agents[0] {
		t.Fatalf("root session %s: agents %v, want %s first", root, names, agents[0])
	}
	for _, a := range agents {
		if !slices.Contains(names, a) {
			t.Errorf("the tree of %s has sessions of %v; no %s", root, names, a)
		}
	}
	return all
}
