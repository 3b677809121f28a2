package agent

import "testing"

func TestTextAcc(t *testing.T) {
	var a textAcc
	if a.Len() != 0 || a.String() != "" || len(a.Bytes()) != 0 {
		t.Fatal("zero value not empty")
	}
	a.WriteString("")
	a.WriteString("one ")
	if a.String() != "one " || a.Len() != 4 {
		t.Fatalf("one chunk: %q", a.String())
	}
	b := a.Bytes()
	b[0] = 'X' // the caller owns Bytes
	if a.String() != "one " {
		t.Fatal("Bytes shares the first chunk")
	}
	a.WriteString("two ")
	a.WriteString("")
	a.WriteString("three")
	if a.String() != "one two three" || a.Len() != 13 || string(a.Bytes()) != "one two three" {
		t.Fatalf("three chunks: %q (%d)", a.String(), a.Len())
	}
}
