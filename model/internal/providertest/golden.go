package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/model"
)

// update rewrites the golden files instead of comparing with them. The
// request goldens were written by the SDK-based providers and are the
// contract of their replacements: do not rewrite them to make a change
// pass.
var update = flag.Bool("update", false, "rewrite golden files under testdata")

// Redirect is a transport that sends every request to the server at base
// (scheme and host), whatever the request's host: a test can then call a
// provider's official host (which changes what is sent) on loopback.
type Redirect struct {
	Base *url.URL
	Next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (r Redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = r.Base.Scheme, r.Base.Host
	return r.Next.RoundTrip(req)
}

// RedirectClient is a client of s that sends every request to s.
func (s *Server) RedirectClient() *http.Client {
	u, _ := url.Parse(s.URL)
	return &http.Client{Transport: Redirect{Base: u, Next: s.Client().Transport}}
}

// RawBody is the body of request i as it was sent.
func (s *Server) RawBody(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raws[i]
}

// Path is the request URI (path and query) of request i.
func (s *Server) Path(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[i]
}

// GoldenJSON compares the JSON got with the file path (semantically: key
// order and white space do not matter, numbers compare as float64), or
// writes it there, indented, with -update.
func GoldenJSON(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Fatalf("%s: not JSON: %v", path, err)
		}
		buf.WriteByte('\n')
		write(t, path, buf.Bytes())
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var g any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got is not JSON: %v\n%s", path, err, got)
	}
	JSONEqual(t, path, g, string(want))
}

// HeaderGolden is what TestRequestHeaders compares: every header the SDK
// sent, by canonical name.
type HeaderGolden map[string][]string

// GoldenHeaders compares the request headers h with the file path, or
// writes them there with -update. Headers named in ignore (canonical
// names; a name ending in "*" is a prefix) may differ or be missing on
// either side; every other header must be sent with the same values, and
// no header may be added.
func GoldenHeaders(t testing.TB, path string, h http.Header, ignore []string) {
	t.Helper()
	if *update {
		b, _ := json.MarshalIndent(HeaderGolden(h), "", "  ")
		write(t, path, append(b, '\n'))
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want HeaderGolden
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	ignored := func(name string) bool {
		for _, p := range ignore {
			if name == p || strings.HasSuffix(p, "*") && strings.HasPrefix(name, strings.TrimSuffix(p, "*")) {
				return true
			}
		}
		return false
	}
	for name, vals := range want {
		if !ignored(name) && !slices.Equal(h[name], vals) {
			t.Errorf("%s: header %s = %q, want %q", path, name, h[name], vals)
		}
	}
	for name, vals := range h {
		if _, ok := want[name]; !ok && !ignored(name) {
			t.Errorf("%s: header %s = %q is new", path, name, vals)
		}
	}
}

// StreamResult is what a stream yielded: its chunks, and the text of the
// error that ended it ("" when none).
type StreamResult struct {
	Chunks []model.Chunk `json:"chunks"`
	Err    string        `json:"err,omitempty"`
	// ErrType is the Type of a provider error (an API error type).
	ErrType string `json:"err_type,omitempty"`
}

// GoldenStream serves the file sse (a raw text/event-stream body, sent as
// it is) to m and compares what m's stream yields with the file of the
// same name ending in ".golden.json", or writes it there with -update.
// errType extracts an error's API type (nil: none).
func GoldenStream(t *testing.T, path string, sse string, m func(s *Server) model.Model, errType func(error) string) {
	t.Helper()
	body, err := os.ReadFile(sse)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(t, path, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})
	var res StreamResult
	for c, err := range m(s).Stream(context.Background(), Hello()) {
		if err != nil {
			res.Err = err.Error()
			if errType != nil {
				res.ErrType = errType(err)
			}
			break
		}
		res.Chunks = append(res.Chunks, c)
	}
	got, _ := json.MarshalIndent(res, "", "  ")
	golden := strings.TrimSuffix(sse, filepath.Ext(sse)) + ".golden.json"
	if *update {
		write(t, golden, append(got, '\n'))
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	var w StreamResult
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: %v", golden, err)
	}
	if res.Err != w.Err || res.ErrType != w.ErrType {
		t.Errorf("%s: error %q (type %q), want %q (type %q)", sse, res.Err, res.ErrType, w.Err, w.ErrType)
	}
	WantChunks(t, res.Chunks, w.Chunks)
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
