package opencode

import (
	"strings"
	"testing"
	"time"
)

// TestSummarize: the TUI's /compact (POST /session/{id}/summarize) on an
// idle session summarises its turns before the latest one: the answer is
// true, the summary reaches the transcript as the run's answer,
// session.compacted is published, and the session's next prompt goes on.
// Bad bodies and unknown sessions are refused.
func TestSummarize(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  solo:
    model: {type: scripted, turns: ["an answer"]}
`)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	sid := str(createSession(t, base, "")["id"])
	for _, q := range []string{"first question", "second question"} {
		mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody(q))
	}
	body := `{"providerID":"agentpool","modelID":"scripted"}`
	for _, bad := range []string{`{}`, `{"providerID":"agentpool"}`, `{"providerID":"a","modelID":"b","extra":1}`, `[`} {
		if code, v := call(t, "POST", base+"/session/"+sid+"/summarize", bad); code != 400 || get(v, "_tag") != "InvalidRequestError" {
			t.Errorf("summarize with %s: %d %v", bad, code, v)
		}
	}
	if code, _ := call(t, "POST", base+"/session/ses_unknown00000000000000000000/summarize", body); code != 404 {
		t.Errorf("summarize of an unknown session: %d", code)
	}

	if v := mustCall(t, 200, "POST", base+"/session/"+sid+"/summarize", body); v != true {
		t.Fatalf("summarize answered %v", v)
	}
	ev.wait(isType("session.compacted", sid), 10*time.Second)
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	found := false
	for _, m := range msgs {
		for _, part := range arr(get(m, "parts")) {
			if strings.HasPrefix(str(get(part, "text")), "Test model summary of 2 messages.") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no summary in the transcript: %v", msgs)
	}
	v := obj(mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody("third question")))
	if parts := arr(v["parts"]); len(parts) == 0 {
		t.Errorf("the prompt after the summary answered %v", v)
	}
}
