package opencode

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

// fuzzOpenCodeYAML: lead delegates to helper, which thinks and answers.
const fuzzOpenCodeYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: test
      call_tools: [task]
      tool_args:
        task: {agent_or_team: helper, prompt: "Help.", description: "Helping"}
      custom_output_text: "Led."
    tools: [subagent]
  helper:
    model: {type: scripted, turns: [{thinking: "hm ", text: "Helped."}]}
`

// fuzzRoutes are the requests a fuzz input is sent as: the body of a
// route that takes one, or the raw query of one that reads queries. {sid}
// is a session created first.
var fuzzRoutes = []struct {
	method, path string
	query        bool // the input is the raw query, not the body
}{
	{"POST", "/session", false},
	{"PATCH", "/session/{sid}", false},
	{"POST", "/session/{sid}/message", false},
	{"POST", "/session/{sid}/prompt_async", false},
	{"GET", "/session", true},
	{"GET", "/session/{sid}/message", true},
}

// FuzzRequestBodies sends arbitrary bodies (and queries) to the OpenCode
// routes that read them. Nothing may panic or hang; every answer is a
// client error or a success, with a JSON body (204 aside).
func FuzzRequestBodies(f *testing.F) {
	m, err := config.Parse("fuzz.yaml", []byte(fuzzOpenCodeYAML))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct {
		route int
		in    string
	}{
		{0, `{}`}, {0, ``}, {0, `{"title":"t","agent":"helper","metadata":{"a":[1,{"b":null}]}}`},
		{0, `{"parentID":"ses_nope"}`}, {0, `{"parentID":"x"}`}, {0, `{"agent":"nobody"}`}, {0, `[]`}, {0, `{"title":5}`},
		{1, `{"title":"new title"}`}, {1, `{"metadata":{"k":"v","opencode_directory":"/x"}}`}, {1, `{"title":null}`}, {1, `null`},
		{2, `{"parts":[{"type":"text","text":"hello"}]}`},
		{2, `{"agent":"helper","messageID":"msg_1","parts":[{"type":"text","text":"a"},{"type":"agent","name":"helper"}]}`},
		{2, `{"parts":[{"type":"subtask","agent":"helper","prompt":"p","description":"d"}]}`},
		{2, `{"noReply":true,"parts":[{"type":"text","text":"later"}]}`},
		{2, `{"parts":[{"type":"file","url":"file:///x"}]}`}, {2, `{"parts":[]}`}, {2, `{"parts":null}`},
		{2, `{"messageID":"x","parts":[{"type":"text","text":"a"}]}`}, {2, `{"model":{"providerID":"p","modelID":"m"},"tools":{"task":false},"system":"s","parts":[{"type":"text","text":"a"}]}`},
		{3, `{"parts":[{"type":"text","text":"async"}]}`}, {3, `{`},
		{4, `roots=true&limit=2&start=0&search=t`}, {4, `limit=-1`}, {4, `roots=maybe&start=x`}, {4, `%zz`},
		{5, `limit=1`}, {5, `before=msg_x&limit=abc`}, {5, `limit=99999999999999999999`},
	} {
		f.Add([]byte(s.in), uint8(s.route))
	}
	f.Fuzz(func(t *testing.T, in []byte, route uint8) {
		p, err := pool.New(m, pool.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		s := New(p, Options{MaxBodyBytes: 64 << 10, Heartbeat: time.Hour})
		defer s.Close()
		serve := func(r *http.Request) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				s.ServeHTTP(w, r)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				buf := make([]byte, 1<<20)
				t.Fatalf("%s %s hangs\n%s", r.Method, r.URL, buf[:runtime.Stack(buf, true)])
			}
			return w
		}
		created := serve(httptest.NewRequest("POST", "/session", nil))
		var sess struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(created.Body.Bytes(), &sess); err != nil || sess.ID == "" {
			t.Fatalf("create session: %d %s", created.Code, created.Body)
		}
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := bytes.ReplaceAll([]byte(rt.path), []byte("{sid}"), []byte(sess.ID))
		var r *http.Request
		if rt.query {
			r = httptest.NewRequest(rt.method, string(path), nil)
			r.URL.RawQuery = string(in)
		} else {
			r = httptest.NewRequest(rt.method, string(path), bytes.NewReader(in))
			r.Header.Set("Content-Type", "application/json")
		}
		w := serve(r)
		switch {
		case w.Code == http.StatusNoContent:
		case w.Code == http.StatusOK, w.Code == http.StatusBadRequest, w.Code == http.StatusNotFound,
			w.Code == http.StatusConflict, w.Code == http.StatusRequestEntityTooLarge:
			if !json.Valid(w.Body.Bytes()) {
				t.Fatalf("%s %s: %d with a body that is not JSON: %s", rt.method, rt.path, w.Code, w.Body)
			}
		default:
			t.Fatalf("%s %s: status %d: %s", rt.method, rt.path, w.Code, w.Body)
		}
	})
}
