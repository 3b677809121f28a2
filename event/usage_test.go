package event

import "testing"

// Sub undoes Add, field by field.
func TestUsageSubUndoesAdd(t *testing.T) {
	base := Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, ReasoningTokens: 5}
	o := Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40, ReasoningTokens: 50}
	u := base
	u.Add(o)
	if u == base {
		t.Fatal("Add changed nothing")
	}
	u.Sub(o)
	if u != base {
		t.Errorf("Add then Sub: %+v, want %+v", u, base)
	}
}
