package main

import (
	"bytes"
	"os"
	"testing"
)

func TestReferenceIsCurrent(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/tool-reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/tool-reference.md is stale: run `go generate ./tool` and commit the result")
	}
	for _, name := range []string{"### Read", "### Bash", "### TodoWrite", "### WebFetch", "### task", `"file_path"`, `"old_string"`, `"run_in_background"`} {
		if !bytes.Contains(got, []byte(name)) {
			t.Errorf("reference lacks %s", name)
		}
	}
}
