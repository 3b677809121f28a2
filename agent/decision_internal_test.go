package agent

import (
	"encoding/json"
	"testing"
)

// A tools/pre-execute answer that comes back through a hookEnv decodes in
// its current form and in the form it had before Action (Allow, Input),
// which a durable engine may replay: an old denial still denies.
func TestToolDecisionWire(t *testing.T) {
	for _, c := range []struct{ in, action, input string }{
		{`{"action":"deny","reason":"r"}`, ToolDeny, ""},
		{`{"action":"allow","updated_input":{"n":1}}`, ToolAllow, `{"n":1}`},
		{`{"updated_input":null}`, "", ""},
		{`{"Allow":false,"Reason":"r","Input":null}`, ToolDeny, ""},
		{`{"Allow":true,"Reason":"","Input":{"n":2}}`, ToolAllow, `{"n":2}`},
	} {
		var w toolDecisionWire
		if err := json.Unmarshal([]byte(c.in), &w); err != nil {
			t.Fatal(err)
		}
		d := w.decision()
		if d.Action != c.action || string(d.UpdatedInput) != c.input {
			t.Errorf("%s: decoded %+v (input %s), want action %q input %q", c.in, d, d.UpdatedInput, c.action, c.input)
		}
	}
}
