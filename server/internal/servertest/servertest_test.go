package servertest

import (
	"context"
	"net/http"
	"testing"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
)

const manifest = `
agents:
  boss:
    model: {type: scripted, turns: ["the answer"]}
`

// Do sends the method, body and headers given, Host as the request's
// host, and returns the answer read whole.
func TestDo(t *testing.T) {
	NoLeaks(t)
	ts := Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 64)
		n, _ := r.Body.Read(b)
		w.Header().Set("X-Seen", r.Method+" "+r.Host+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("X-Test"))
		w.WriteHeader(http.StatusTeapot)
		w.Write(b[:n])
	}))
	a := PostJSON(t, ts.URL+"/x", `{"a":1}`, "X-Test", "yes", "Host", "example.test")
	if a.Code != http.StatusTeapot || a.Body != `{"a":1}` || a.Header.Get("X-Seen") != "POST example.test application/json yes" {
		t.Fatalf("answer %+v", a)
	}
}

// Ends.Wait returns a session/end fired before or after it was called.
func TestEndsWait(t *testing.T) {
	reg := hook.New(hook.Options{})
	ends := NewEnds(reg)
	ctx := context.Background()
	reg.OnSessionEnd.Fire(ctx, hook.SessionEnd{SessionID: "ses_1", Agent: "boss"})
	if got := ends.Wait(t, Session("ses_1")); got.Agent != "boss" {
		t.Fatalf("Wait = %+v", got)
	}
	done := make(chan hook.SessionEnd)
	go func() { done <- ends.Wait(t, Agent("late")) }()
	reg.OnSessionEnd.Fire(ctx, hook.SessionEnd{SessionID: "ses_2", Agent: "late"})
	if got := <-done; got.SessionID != "ses_2" {
		t.Fatalf("Wait = %+v", got)
	}
	if n := len(ends.All()); n != 2 {
		t.Fatalf("%d ends recorded, want 2", n)
	}
}

// A pool's run ends with its session/end recorded; FaultyPool's store
// counts the run's writes.
func TestPools(t *testing.T) {
	NoLeaks(t)
	reg := hook.New(hook.Options{})
	ends := NewEnds(reg)
	p := PoolWith(t, manifest, pool.Options{Hooks: reg})
	discard := event.SinkFunc(func(event.Event) {})
	res, err := p.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, discard)
	if err != nil {
		t.Fatal(err)
	}
	ends.Wait(t, Session(res.SessionID))
	fp, st := FaultyPool(t, manifest)
	if _, err := fp.RunSink(context.Background(), pool.RunRequest{Prompt: "go"}, discard); err != nil {
		t.Fatal(err)
	}
	if st.Writes() == 0 {
		t.Fatal("the faulty store counted no writes")
	}
}
