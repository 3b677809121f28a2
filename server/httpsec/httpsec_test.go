package httpsec_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/server/httpsec"
)

func TestCheckBind(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool // without a token
	}{
		{"127.0.0.1:8765", true},
		{"127.0.0.1:0", true},
		{"127.1.2.3:80", true},
		{"localhost:4096", true},
		{"[::1]:4096", true},
		{"0.0.0.0:8765", false},
		{":8765", false},
		{"[::]:8765", false},
		{"192.168.1.20:8765", false},
		{"example.com:80", false},
	} {
		err := httpsec.CheckBind(tc.addr, "")
		if (err == nil) != tc.ok {
			t.Errorf("CheckBind(%q) without a token = %v, want ok %v", tc.addr, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, httpsec.ErrTokenRequired) || !strings.Contains(err.Error(), httpsec.EnvToken)) {
			t.Errorf("CheckBind(%q): unclear error %v", tc.addr, err)
		}
		if err := httpsec.CheckBind(tc.addr, "s3cret"); err != nil {
			t.Errorf("CheckBind(%q) with a token = %v", tc.addr, err)
		}
	}
	if err := httpsec.CheckBind("no-port", ""); err == nil {
		t.Error("CheckBind of an address without a port: want an error")
	}
}

func TestCheckListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := httpsec.CheckListener(ln, ""); err != nil {
		t.Errorf("loopback listener: %v", err)
	}
	if !httpsec.WithListener(httpsec.Options{}, ln).LoopbackHost {
		t.Error("WithListener on loopback without a token: want LoopbackHost")
	}
	if httpsec.WithListener(httpsec.Options{Token: "t"}, ln).LoopbackHost {
		t.Error("WithListener with a token: want no host check")
	}
	wide := fakeListener{&net.TCPAddr{IP: net.IPv4zero, Port: 80}}
	if err := httpsec.CheckListener(wide, ""); !errors.Is(err, httpsec.ErrTokenRequired) {
		t.Errorf("listener on 0.0.0.0 without a token: %v", err)
	}
	if err := httpsec.CheckListener(wide, "t"); err != nil {
		t.Errorf("listener on 0.0.0.0 with a token: %v", err)
	}
}

type fakeListener struct{ addr net.Addr }

func (f fakeListener) Accept() (net.Conn, error) { return nil, errors.New("fake") }
func (f fakeListener) Close() error              { return nil }
func (f fakeListener) Addr() net.Addr            { return f.addr }

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })

func do(h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:8765"
	for k, v := range hdr {
		if k == "Host" {
			r.Host = v
			continue
		}
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestToken(t *testing.T) {
	const token = "tok-0123456789abcdef"
	open := httpsec.Handler(ok, httpsec.Options{})
	if w := do(open, "GET", "/healthz", nil); w.Code != 200 {
		t.Errorf("no token configured: %d", w.Code)
	}
	h := httpsec.Handler(ok, httpsec.Options{Token: token})
	for name, auth := range map[string]string{
		"missing":     "",
		"wrong":       "Bearer tok-0123456789abcdeX",
		"prefix":      "Bearer tok-0123",
		"longer":      "Bearer " + token + "x",
		"basic":       "Basic " + token,
		"no scheme":   token,
		"empty token": "Bearer ",
	} {
		for _, path := range []string{"/", "/healthz", "/agents", "/session/x/message"} {
			hdr := map[string]string{}
			if auth != "" {
				hdr["Authorization"] = auth
			}
			w := do(h, "POST", path, hdr)
			if w.Code != http.StatusUnauthorized {
				t.Errorf("%s token on %s: %d, want 401", name, path, w.Code)
			}
			if strings.Contains(w.Body.String(), token) || strings.Contains(w.Body.String(), "tok-0123") {
				t.Errorf("the 401 body echoes a token: %s", w.Body)
			}
			if w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		}
	}
	for _, auth := range []string{"Bearer " + token, "bearer " + token, "BEARER  " + token} {
		if w := do(h, "GET", "/healthz", map[string]string{"Authorization": auth}); w.Code != 200 {
			t.Errorf("%q: %d, want 200", auth, w.Code)
		}
	}
	// A token also guards any Host (the server is reachable from afar).
	if w := do(h, "GET", "/", map[string]string{"Authorization": "Bearer " + token, "Host": "agents.example.com"}); w.Code != 200 {
		t.Errorf("token and a remote host: %d", w.Code)
	}
}

func TestCORS(t *testing.T) {
	none := httpsec.Handler(ok, httpsec.Options{})
	// No CORS by default: no headers, and a foreign page is refused.
	w := do(none, "POST", "/", map[string]string{"Origin": "https://evil.example"})
	if w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign origin without CORS: %d %v", w.Code, w.Header())
	}
	w = do(none, "OPTIONS", "/", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"})
	if w.Code != http.StatusForbidden || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign preflight without CORS: %d %v", w.Code, w.Header())
	}
	// The server's own origin and clients without Origin are fine.
	if w := do(none, "POST", "/", map[string]string{"Origin": "http://127.0.0.1:8765"}); w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("same origin: %d %v", w.Code, w.Header())
	}
	if w := do(none, "POST", "/", nil); w.Code != 200 {
		t.Errorf("no Origin: %d", w.Code)
	}

	const app = "https://app.example"
	h := httpsec.Handler(ok, httpsec.Options{Token: "t", CORSOrigins: []string{app + "/"}})
	// A preflight of a configured origin is answered without the token.
	w = do(h, "OPTIONS", "/", map[string]string{"Origin": app, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"})
	if w.Code != http.StatusNoContent || w.Header().Get("Access-Control-Allow-Origin") != app ||
		w.Header().Get("Access-Control-Allow-Headers") != "authorization, content-type" {
		t.Errorf("preflight: %d %v", w.Code, w.Header())
	}
	// The request itself needs the token; its answers (even a 401) carry
	// the CORS headers so that the page can read them.
	w = do(h, "POST", "/", map[string]string{"Origin": app})
	if w.Code != http.StatusUnauthorized || w.Header().Get("Access-Control-Allow-Origin") != app {
		t.Errorf("configured origin without token: %d %v", w.Code, w.Header())
	}
	w = do(h, "POST", "/", map[string]string{"Origin": app, "Authorization": "Bearer t"})
	if w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != app || w.Header().Get("Vary") != "Origin" {
		t.Errorf("configured origin with token: %d %v", w.Code, w.Header())
	}
	if w := do(h, "POST", "/", map[string]string{"Origin": "https://other.example", "Authorization": "Bearer t"}); w.Code != http.StatusForbidden {
		t.Errorf("another origin: %d", w.Code)
	}
	star := httpsec.Handler(ok, httpsec.Options{CORSOrigins: []string{"*"}})
	if w := do(star, "GET", "/", map[string]string{"Origin": "https://any.example"}); w.Code != 200 || w.Header().Get("Access-Control-Allow-Origin") != "https://any.example" {
		t.Errorf("*: %d %v", w.Code, w.Header())
	}
}

func TestLoopbackHost(t *testing.T) {
	h := httpsec.Handler(ok, httpsec.Options{LoopbackHost: true})
	for host, want := range map[string]int{
		"127.0.0.1:8765":       200,
		"localhost:8765":       200,
		"LOCALHOST":            200,
		"[::1]:4096":           200,
		"app.localhost:1":      200,
		"rebound.example:8765": http.StatusForbidden,
		"192.168.1.2:8765":     http.StatusForbidden,
		"":                     http.StatusForbidden,
	} {
		if w := do(h, "GET", "/", map[string]string{"Host": host}); w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
}
