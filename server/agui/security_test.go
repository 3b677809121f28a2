package agui

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/internal/servertest"

	"github.com/agentpool/agentpool/server/httpsec"
)

// serveOn runs s.Serve on a loopback listener and returns its base URL.
func serveOn(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func request(t *testing.T, method, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res, b.String()
}

// TestServerSecurity: with a token every route needs it; without one the
// server only serves loopback; no CORS unless configured.
func TestServerSecurity(t *testing.T) {
	servertest.NoLeaks(t)
	p := servertest.Pool(t, nestedYAML)
	const token = "agui-token-5d41402abc4b2a76"

	url := serveOn(t, New(p, Options{Token: token}))
	json := map[string]string{"Content-Type": "application/json"}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/healthz", ""}, {"GET", "/agents", ""}, {"POST", "/", runBody("t-sec", "Hi.")}, {"GET", "/nowhere", ""},
		{"GET", "/approvals", ""}, {"POST", "/approvals/per_x", `{"reply":"allow_once"}`},
	} {
		res, body := request(t, r.method, url+r.path, r.body, json)
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d", r.method, r.path, res.StatusCode)
		}
		if strings.Contains(body, token) {
			t.Errorf("401 body holds the token: %s", body)
		}
	}
	auth := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + token}
	if res, body := request(t, "POST", url+"/", runBody("t-sec", "Hi."), auth); res.StatusCode != 200 || !strings.Contains(body, wire.TypeRunFinished) {
		t.Errorf("run with the token: %d %s", res.StatusCode, tail(body))
	}
	// Any Host is fine once a token guards the server.
	auth["Host"] = "agents.example.com"
	if res, _ := request(t, "GET", url+"/healthz", "", auth); res.StatusCode != 200 {
		t.Errorf("token, remote Host: %d", res.StatusCode)
	}

	// Without a token: loopback Host only (DNS rebinding), no CORS.
	open := serveOn(t, New(p, Options{}))
	if res, _ := request(t, "GET", open+"/healthz", "", nil); res.StatusCode != 200 {
		t.Errorf("loopback, no token: %d", res.StatusCode)
	}
	if res, _ := request(t, "GET", open+"/healthz", "", map[string]string{"Host": "rebound.example:8765"}); res.StatusCode != http.StatusForbidden {
		t.Errorf("rebound Host: %d, want 403", res.StatusCode)
	}
	res, _ := request(t, "POST", open+"/", runBody("t-cors", "Hi."), map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"})
	if res.StatusCode != http.StatusForbidden || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("cross-origin run without CORS: %d %v", res.StatusCode, res.Header)
	}
	cors := serveOn(t, New(p, Options{CORSOrigins: []string{"https://app.example"}}))
	res, _ = request(t, "OPTIONS", cors+"/", "", map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST"})
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("preflight of a configured origin: %d %v", res.StatusCode, res.Header)
	}

	// A non-loopback listener needs a token (Serve refuses it before
	// accepting anything; the test never opens such a listener).
	wide := fakeListener{&net.TCPAddr{IP: net.IPv4zero, Port: 8765}}
	if err := New(p, Options{}).Serve(context.Background(), wide); !errors.Is(err, httpsec.ErrTokenRequired) {
		t.Errorf("Serve on 0.0.0.0 without a token: %v", err)
	}
}

type fakeListener struct{ addr net.Addr }

func (f fakeListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (f fakeListener) Close() error              { return nil }
func (f fakeListener) Addr() net.Addr            { return f.addr }
