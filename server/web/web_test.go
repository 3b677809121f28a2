package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentpool/agentpool/server/internal/servertest"
	"github.com/agentpool/agentpool/server/opencode"
	"github.com/agentpool/agentpool/server/web"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const manifest = `
default_agent: lead
agents:
  lead:
    model: {type: scripted, turns: [{text: "hello"}]}
`

// serve runs an OpenCode server with opts (and the UI unless noUI) on a
// loopback port with Serve, as the CLI does, until the test ends.
func serve(t *testing.T, opts opencode.Options, noUI bool) string {
	t.Helper()
	p := servertest.Pool(t, manifest)
	if !noUI {
		opts.UI = web.New()
	}
	srv := opencode.New(p, opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
		http.DefaultClient.CloseIdleConnections()
	})
	return "http://" + ln.Addr().String()
}

// do makes one request without a body (servertest.Do).
func do(t *testing.T, method, url string, hdr ...string) servertest.Answer {
	t.Helper()
	return servertest.Do(t, method, url, "", hdr...)
}

// TestPageAndAssets: the page and every file it loads, directly or by a
// module import, are served with their exact content type and the
// security headers; the page has no inline script; HEAD and a
// revalidation (304) work.
func TestPageAndAssets(t *testing.T) {
	base := serve(t, opencode.Options{}, false)
	page := do(t, "GET", base+"/")
	if page.Code != 200 || page.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: %d %q", page.Code, page.Header.Get("Content-Type"))
	}
	checkHeaders(t, "/", page.Header)
	for _, tag := range regexp.MustCompile(`(?s)<script[^>]*>`).FindAllString(page.Body, -1) {
		if !strings.Contains(tag, `src="/ui/`) {
			t.Errorf("a script that is not a file of the UI: %s", tag)
		}
	}
	if strings.Contains(page.Body, " style=") || strings.Contains(page.Body, "<style") {
		t.Error("inline style in the page (the CSP refuses it)")
	}

	want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	seen := map[string]bool{}
	queue := regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`).FindAllStringSubmatch(page.Body, -1)
	paths := []string{}
	for _, m := range queue {
		paths = append(paths, m[1])
	}
	imports := regexp.MustCompile(`(?m)^import .* from '\./([^']+)';`)
	for len(paths) > 0 {
		p := paths[0]
		paths = paths[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		a := do(t, "GET", base+p)
		ext := p[strings.LastIndex(p, "."):]
		if a.Code != 200 || a.Header.Get("Content-Type") != want[ext] || a.Body == "" {
			t.Errorf("GET %s: %d %q (%d bytes)", p, a.Code, a.Header.Get("Content-Type"), len(a.Body))
			continue
		}
		checkHeaders(t, p, a.Header)
		for _, m := range imports.FindAllStringSubmatch(a.Body, -1) {
			paths = append(paths, web.AssetPrefix+m[1])
		}
	}
	for _, p := range []string{"/ui/app.js", "/ui/api.js", "/ui/store.js", "/ui/tree.js", "/ui/timeline.js", "/ui/transcript.js", "/ui/approvals.js", "/ui/style.css"} {
		if !seen[p] {
			t.Errorf("%s is not reached from the page", p)
		}
	}

	head := do(t, "HEAD", base+"/ui/app.js")
	if head.Code != 200 || head.Body != "" || head.Header.Get("Content-Type") != want[".js"] {
		t.Errorf("HEAD /ui/app.js: %d %q %q", head.Code, head.Header.Get("Content-Type"), head.Body)
	}
	etag := head.Header.Get("ETag")
	if re := do(t, "GET", base+"/ui/app.js", "If-None-Match", etag); etag == "" || re.Code != http.StatusNotModified {
		t.Errorf("revalidation with ETag %q: %d", etag, re.Code)
	}
}

func checkHeaders(t *testing.T, path string, h http.Header) {
	t.Helper()
	if got := h.Get("Content-Security-Policy"); got != web.CSP || !strings.HasPrefix(got, "default-src 'self'") {
		t.Errorf("%s: CSP %q", path, got)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("%s: X-Content-Type-Options %q", path, h.Get("X-Content-Type-Options"))
	}
	if h.Get("Cache-Control") != "no-cache" {
		t.Errorf("%s: Cache-Control %q", path, h.Get("Cache-Control"))
	}
}

// notFoundError reports whether a is the OpenCode API's 404.
func notFoundError(a servertest.Answer) bool {
	var v struct {
		Name string `json:"name"`
	}
	return a.Code == 404 && json.Unmarshal([]byte(a.Body), &v) == nil && v.Name == "NotFoundError"
}

// TestOtherPathsStayTheAPI: only GET and HEAD of the UI's own files are
// the UI's; unknown files under /ui/, other methods and every other
// path are answered by the API as without the UI.
func TestOtherPathsStayTheAPI(t *testing.T) {
	base := serve(t, opencode.Options{}, false)
	for _, r := range []struct{ method, path string }{
		{"GET", "/ui/nope.js"}, {"GET", "/ui/"}, {"GET", "/ui"}, {"GET", "/index.html"},
		{"GET", "/nowhere"}, {"POST", "/"}, {"DELETE", "/ui/app.js"}, {"GET", "/ui/../doc/x"},
	} {
		if a := do(t, r.method, base+r.path); !notFoundError(a) || a.Header.Get("Content-Security-Policy") != "" {
			t.Errorf("%s %s: %d %s (want the API's 404)", r.method, r.path, a.Code, a.Body)
		}
	}
	if a := do(t, "GET", base+"/global/health"); a.Code != 200 || !strings.Contains(a.Body, `"healthy":true`) {
		t.Errorf("GET /global/health beside the UI: %d %s", a.Code, a.Body)
	}

	plain := serve(t, opencode.Options{}, true)
	if a := do(t, "GET", plain+"/"); !notFoundError(a) {
		t.Errorf("GET / without a UI: %d %s", a.Code, a.Body)
	}
	if a := do(t, "GET", plain+"/ui/app.js"); !notFoundError(a) {
		t.Errorf("GET /ui/app.js without a UI: %d %s", a.Code, a.Body)
	}
}

// TestSecurity: with a token the page and assets load without it (they
// hold no data) and every API call, the event stream too, still needs
// it; the Host and origin checks apply to the UI as to the API.
func TestSecurity(t *testing.T) {
	const token = "web-token-0b9d7e1a"
	base := serve(t, opencode.Options{Token: token}, false)
	for _, p := range []string{"/", "/ui/app.js", "/ui/style.css"} {
		if a := do(t, "GET", base+p); a.Code != 200 {
			t.Errorf("GET %s without the token: %d", p, a.Code)
		}
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/session"}, {"GET", "/event"}, {"GET", "/agent"}, {"POST", "/session"}, {"POST", "/"}, {"GET", "/ui/nope.js"},
	} {
		if a := do(t, r.method, base+r.path); a.Code != http.StatusUnauthorized || strings.Contains(a.Body, token) {
			t.Errorf("%s %s without the token: %d %s", r.method, r.path, a.Code, a.Body)
		}
	}
	if a := do(t, "GET", base+"/session", "Authorization", "Bearer "+token); a.Code != 200 {
		t.Errorf("GET /session with the token: %d %s", a.Code, a.Body)
	}

	open := serve(t, opencode.Options{}, false)
	if a := do(t, "GET", open+"/", "Host", "evil.example"); a.Code != http.StatusForbidden {
		t.Errorf("GET / for a non-loopback Host (DNS rebinding): %d", a.Code)
	}
	if a := do(t, "GET", open+"/ui/app.js", "Origin", "https://evil.example"); a.Code != http.StatusForbidden {
		t.Errorf("GET /ui/app.js from another origin: %d", a.Code)
	}
	if a := do(t, "GET", open+"/", "Origin", open); a.Code != 200 {
		t.Errorf("GET / from the server's own origin: %d", a.Code)
	}
}
