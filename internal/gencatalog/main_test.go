package main

import (
	"bytes"
	"os"
	"testing"
)

// The checked-in catalog must be what the generator writes now.
func TestCatalogUpToDate(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/catalog.md")
	if err != nil {
		t.Fatalf("%v (run: go generate ./hook)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/catalog.md is stale: run `go generate ./hook` and commit the result")
	}
}
