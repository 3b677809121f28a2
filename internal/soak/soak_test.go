package soak

import "testing"

func TestPick(t *testing.T) {
	t.Setenv(Env, "")
	if Enabled() || Pick(1, 20) != 1 {
		t.Fatal("soak enabled without the variable")
	}
	t.Setenv(Env, "1")
	if !Enabled() || Pick(1, 20) != 20 {
		t.Fatal("soak not enabled with the variable")
	}
}
