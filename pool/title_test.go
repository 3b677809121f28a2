package pool

import (
	"strings"
	"testing"
)

func TestTitle(t *testing.T) {
	long := strings.Repeat("é", 70) // 2 bytes a rune
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"short prompt", "short prompt"},
		{strings.Repeat("a", 60), strings.Repeat("a", 60)},
		{strings.Repeat("a", 61), strings.Repeat("a", 60) + "..."},
		{strings.Repeat("é", 60), strings.Repeat("é", 60)},
		{long, strings.Repeat("é", 60) + "..."},
	} {
		if got := title(tc.in); got != tc.want {
			t.Errorf("title(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
