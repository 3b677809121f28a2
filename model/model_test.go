package model

import (
	"slices"
	"testing"
)

func TestMessageText(t *testing.T) {
	for _, tc := range []struct {
		parts []Part
		want  string
	}{
		{nil, ""},
		{[]Part{{Kind: PartToolCall, ToolName: "x"}}, ""},
		{[]Part{{Kind: PartText, Text: "one"}}, "one"},
		{[]Part{{Kind: PartThinking, Text: "hm"}, {Kind: PartText, Text: "a"}, {Kind: PartToolCall}, {Kind: PartText, Text: "b"}}, "ab"},
	} {
		if got := (Message{Parts: tc.parts}).Text(); got != tc.want {
			t.Errorf("Text of %v = %q, want %q", tc.parts, got, tc.want)
		}
	}
}

func TestMessageToolCalls(t *testing.T) {
	a, b := Part{Kind: PartToolCall, ToolName: "a"}, Part{Kind: PartToolCall, ToolName: "b"}
	txt := Part{Kind: PartText, Text: "t"}
	if got := (Message{Parts: []Part{txt}}).ToolCalls(); got != nil {
		t.Fatalf("no calls: got %v", got)
	}
	mixed := Message{Parts: []Part{txt, a, txt, b}}
	if got := mixed.ToolCalls(); !slices.EqualFunc(got, []Part{a, b}, func(x, y Part) bool { return x.ToolName == y.ToolName }) {
		t.Fatalf("mixed: got %v", got)
	}
	backing := make([]Part, 3, 4)
	copy(backing, []Part{a, b, {Kind: PartToolCall, ToolName: "c"}})
	only := Message{Parts: backing}
	calls := only.ToolCalls()
	if len(calls) != 3 || calls[2].ToolName != "c" {
		t.Fatalf("only calls: got %v", calls)
	}
	// Appending to the result must not write into the message's array.
	_ = append(calls, Part{Kind: PartText, Text: "overwrite?"})
	if backing[:4][3].Text != "" {
		t.Fatal("append to ToolCalls() wrote into the message's array")
	}
}
