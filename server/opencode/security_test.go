package opencode

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/httpsec"
)

// TestServerSecurity: with a token every route (the event stream too)
// needs it; without one the server only serves loopback hosts; no CORS
// unless configured; a non-loopback listener without a token is refused.
func TestServerSecurity(t *testing.T) {
	noLeaks(t)
	p := newPool(t, slowYAML)
	const token = "oc-token-7215ee9c7d9dc229d292"
	_, base := newServer(t, p, Options{Token: token})
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/global/health", ""}, {"GET", "/session", ""}, {"POST", "/session", "{}"},
		{"GET", "/event", ""}, {"GET", "/doc", ""}, {"GET", "/nowhere", ""},
	} {
		code, v := call(t, r.method, base+r.path, r.body)
		if code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d", r.method, r.path, code)
		}
		if msg, _ := obj(v)["error"].(string); strings.Contains(msg, token) || msg == "" {
			t.Errorf("401 body: %v", v)
		}
		if code, _ := call(t, r.method, base+r.path, r.body, "Authorization", "Bearer not-"+token); code != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d", r.method, r.path, code)
		}
	}
	mustCall(t, 200, "GET", base+"/global/health", "", "Authorization", "Bearer "+token)
	created := obj(mustCall(t, 200, "POST", base+"/session", "{}", "Authorization", "Bearer "+token))
	if str(created["id"]) == "" {
		t.Fatalf("session/create with the token: %v", created)
	}

	// No CORS by default: a page of another origin is refused.
	_, open := newServer(t, p, Options{})
	if code, _ := call(t, "POST", open+"/session", "{}", "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("cross-origin request without CORS: %d", code)
	}
	_, cors := newServer(t, p, Options{CORSOrigins: []string{"https://app.example"}})
	req, _ := http.NewRequest("OPTIONS", cors+"/session", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("preflight of a configured origin: %d %v", res.StatusCode, res.Header)
	}

	// Serve: loopback Host only without a token; non-loopback refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(p, Options{Directory: "/work/project"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	mustCall(t, 200, "GET", url+"/global/health", "")
	req, _ = http.NewRequest("GET", url+"/global/health", nil)
	req.Host = "rebound.example:4096"
	if res, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("DNS-rebound Host: %d, want 403", res.StatusCode)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	wide := fakeListener{&net.TCPAddr{IP: net.IPv4zero, Port: 4096}}
	if err := New(p, Options{}).Serve(context.Background(), wide); !errors.Is(err, httpsec.ErrTokenRequired) {
		t.Errorf("Serve on 0.0.0.0 without a token: %v", err)
	}
}

type fakeListener struct{ addr net.Addr }

func (f fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (f fakeListener) Close() error              { return nil }
func (f fakeListener) Addr() net.Addr            { return f.addr }
