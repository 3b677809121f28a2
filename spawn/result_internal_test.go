package spawn

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentpool/agentpool/event"
)

// childResult writes what json.Marshal of its map would write, for every
// stop reason.
func TestChildResultJSON(t *testing.T) {
	for _, c := range []Child{
		{SessionID: "ses_1", Result: Result{StopReason: event.StopCompleted, Output: "done"}},
		{SessionID: "ses_2", Result: Result{StopReason: event.StopMaxTokens, Output: "a \"quoted\" <b>\n\u2028 \xff line"}},
		{SessionID: "ses_3", Result: Result{StopReason: event.StopCompleted}},
		{SessionID: "ses_4", Result: Result{StopReason: event.StopError, Output: "half", Err: errors.New("boom")}},
	} {
		got := childResult(c)
		r := c.Result
		want := map[string]string{"output": r.Output, "session_id": c.SessionID}
		isError := r.StopReason != event.StopCompleted && r.StopReason != event.StopMaxTokens
		if isError {
			want["stop_reason"] = string(r.StopReason)
			want["error"] = r.Err.Error()
		}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != string(b) || got.IsError != isError {
			t.Errorf("childResult(%+v) = %s (error %v), want %s (error %v)", c, got.Content, got.IsError, b, isError)
		}
	}
}
