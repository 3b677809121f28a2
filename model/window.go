// Context windows: how many tokens a model reads in one request, for the
// agent's compaction (docs/control.md, Compaction).

package model

// ContextWindower is implemented by models that know their context window:
// the most tokens one request (system prompt, tools, messages) may hold.
type ContextWindower interface {
	ContextWindow() int
}

// ContextWindowOf returns m's context window in tokens, or 0 when m does
// not know it.
func ContextWindowOf(m Model) int {
	if w, ok := m.(ContextWindower); ok {
		return max(0, w.ContextWindow())
	}
	return 0
}
