package openai

import "strings"

// windows are the context windows of OpenAI's model families, longest
// prefix first (an id is matched by the first prefix it has). Other
// OpenAI-compatible servers' ids are unknown (0): their window is the
// manifest's `context_window`.
var windows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576},
	{"gpt-4o", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-5", 400_000},
	{"o4-mini", 200_000},
	{"o3", 200_000},
	{"o1-mini", 128_000},
	{"o1", 200_000},
	{"gpt-3.5-turbo", 16_385},
}

// ContextWindow implements model.ContextWindower from the table above.
func (m *Model) ContextWindow() int {
	for _, w := range windows {
		if strings.HasPrefix(m.cfg.Model, w.prefix) {
			return w.tokens
		}
	}
	return 0
}
