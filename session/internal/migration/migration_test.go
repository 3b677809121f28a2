package migration

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersSteps(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("B")},
		"m/0001_a.sql": {Data: []byte("A")},
	}
	got := Load(fsys, "m", "test")
	if len(got) != 2 || got[0].Version != 1 || got[0].SQL != "A" || got[1].Name != "0002_b.sql" {
		t.Fatalf("steps: %+v", got)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"bad file name":   {"m/0001_a.sql": {}, "m/x.sql": {}},
		"out of sequence": {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r, _ := recover().(string)
				if !strings.HasPrefix(r, "test: ") || !strings.Contains(r, "migration") {
					t.Errorf("panic %q, want the store's name and what is wrong", r)
				}
			}()
			Load(fsys, "m", "test")
		})
	}
}
