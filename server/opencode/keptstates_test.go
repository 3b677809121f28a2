package opencode

import (
	"fmt"
	"testing"
)

// The mapper of a run keeps the states of its sessions; a session deleted
// since (its state dropped from the facts) gets a new state, as a mapper
// without kept states would make, and the kept states are bounded.
func TestKeptStates(t *testing.T) {
	m := &eventMapper{base: &base{facts: newSessionFacts(10)}}
	k := &keptStates{}
	st := m.lockState("ses_a", k)
	st.mu.Unlock()
	if again := m.lockState("ses_a", k); again != st {
		t.Fatal("the kept state was not used")
	} else {
		again.mu.Unlock()
	}
	if m.facts.drop("ses_a") != st {
		t.Fatal("the facts did not hold the kept state")
	}
	fresh := m.lockState("ses_a", k)
	fresh.mu.Unlock()
	if fresh == st || fresh.deleted || m.facts.get("ses_a") != fresh {
		t.Fatalf("after the delete: state %p (deleted %v), facts hold %p; dropped %p", fresh, fresh.deleted, m.facts.get("ses_a"), st)
	}
	for i := range maxKeptStates + 2 {
		m.lockState(fmt.Sprintf("ses_%d", i), k).mu.Unlock()
	}
	if len(k.ids) != maxKeptStates || k.ids[0] != "ses_2" || len(k.sts) != maxKeptStates {
		t.Errorf("kept %v", k.ids)
	}
}
