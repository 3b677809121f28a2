package webfetch

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// counted serves body and counts the requests it got.
func counted(t *testing.T, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// onLocalhost is srv's URL with the host name localhost.
func onLocalhost(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return "http://localhost:" + u.Port()
}

// TestWebFetchPrivateAddress is the finding of issue 31, item 5: WebFetch
// read loopback services, also through a redirect. By default it connects
// to public addresses only; the check is the dialer's, so it covers every
// address a name resolves to and every redirect, and no proxy takes the
// connection out of its sight.
func TestWebFetchPrivateAddress(t *testing.T) {
	secret, hits := counted(t, "the secret")
	t.Run("direct", func(t *testing.T) {
		r := call(t, New(Options{}), Args{URL: secret.URL + "/x"})
		want := "WebFetch refused " + secret.URL + "/x: 127.0.0.1 is a loopback address; allow it with allowed_hosts in the fetch toolset"
		if !r.IsError || r.Content != want {
			t.Fatalf("got %q\nwant %q", r.Content, want)
		}
	})
	t.Run("IPv4-mapped", func(t *testing.T) {
		u, _ := url.Parse(secret.URL)
		r := call(t, New(Options{}), Args{URL: "http://[::ffff:127.0.0.1]:" + u.Port() + "/"})
		if !r.IsError || !strings.Contains(r.Content, "/: ::ffff:127.0.0.1 is a loopback address; allow it with allowed_hosts") {
			t.Fatalf("%q", r.Content)
		}
	})
	t.Run("name", func(t *testing.T) {
		r := call(t, New(Options{}), Args{URL: onLocalhost(t, secret) + "/"})
		if !r.IsError || !strings.HasPrefix(r.Content, "WebFetch refused "+onLocalhost(t, secret)+"/: localhost resolves to ") ||
			!strings.HasSuffix(r.Content, ", a loopback address; allow it with allowed_hosts in the fetch toolset") {
			t.Fatalf("%q", r.Content)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		// The first server is allowed by name; it redirects to the secret
		// one by address, which is not.
		mux := http.NewServeMux()
		mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, secret.URL+"/x", http.StatusFound)
		})
		front := server(t, mux)
		start := onLocalhost(t, front) + "/go"
		r := call(t, New(Options{Allow: allow(t, "localhost")}), Args{URL: start})
		want := "WebFetch refused " + secret.URL + "/x (redirected from " + start + "): 127.0.0.1 is a loopback address; allow it with allowed_hosts in the fetch toolset"
		if !r.IsError || r.Content != want {
			t.Fatalf("got %q\nwant %q", r.Content, want)
		}
	})
	t.Run("proxy", func(t *testing.T) {
		// A proxy would connect for us: WebFetch uses none, not even its
		// client's, so the private address is refused and the proxy,
		// although allowed, never asked.
		proxy, proxied := counted(t, "the secret, through the proxy")
		pu, _ := url.Parse(proxy.URL)
		client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
		r := call(t, New(Options{Client: client, Allow: loopback(t)}), Args{URL: "http://10.0.0.1/secret"})
		if !r.IsError || r.Content != "WebFetch refused http://10.0.0.1/secret: 10.0.0.1 is a private address; allow it with allowed_hosts in the fetch toolset" {
			t.Fatalf("%q", r.Content)
		}
		if n := proxied.Load(); n != 0 {
			t.Fatalf("the proxy got %d requests", n)
		}
	})
	if n := hits.Load(); n != 0 {
		t.Fatalf("the secret server got %d requests", n)
	}
}

// TestWebFetchAllowedHosts: allowed_hosts opens named hosts, addresses and
// networks, and nothing else.
func TestWebFetchAllowedHosts(t *testing.T) {
	srv, _ := counted(t, "hello")
	byName := onLocalhost(t, srv) + "/"
	for _, c := range []struct {
		allow []string
		url   string
		ok    bool
	}{
		{[]string{"127.0.0.1"}, srv.URL, true},
		{[]string{"::ffff:127.0.0.1"}, srv.URL, true},
		{[]string{"127.0.0.0/8"}, srv.URL, true},
		{[]string{"127.0.0.0/8", "::1"}, byName, true}, // whichever address localhost has
		{[]string{"LocalHost."}, byName, true},
		{[]string{"localhost"}, srv.URL, false}, // a name allows the name, not its address
		{[]string{"127.0.0.2"}, srv.URL, false},
		{[]string{"10.0.0.0/8", "example.org"}, srv.URL, false},
	} {
		r := call(t, New(Options{Allow: allow(t, c.allow...)}), Args{URL: c.url})
		switch {
		case c.ok && (r.IsError || !strings.HasSuffix(r.Content, "\n\nhello")):
			t.Errorf("allowed_hosts %v, %s: %q", c.allow, c.url, r.Content)
		case !c.ok && (!r.IsError || !strings.HasPrefix(r.Content, "WebFetch refused "+c.url)):
			t.Errorf("allowed_hosts %v, %s: want a refusal, got %q", c.allow, c.url, r.Content)
		}
	}

	for entry, want := range map[string]string{
		"http://example.org": `"http://example.org" is a URL; write a host name (localhost), an IP address (127.0.0.1) or a CIDR network (10.0.0.0/8), without scheme, port or path`,
		"example.org:8080":   `"example.org:8080" is not a host name (localhost), an IP address (127.0.0.1) or a CIDR network (10.0.0.0/8), without scheme, port or path (wildcards are not supported)`,
		"*.example.org":      `"*.example.org" is not a host name`,
		"10.0.0.0/33":        `"10.0.0.0/33" is not a CIDR network: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`,
		"example.org/path":   `"example.org/path" is not a CIDR network`,
		"":                   `"" is not a host name`,
		"a..b":               `"a..b" is not a host name`,
	} {
		if _, err := ParseAllowList([]string{"ok.example", entry}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want an error with %q, got %v", entry, want, err)
		}
	}
}

// TestAddressKinds: what the dialer refuses, checked on the addresses it
// is about to connect to (no connection is made here).
func TestAddressKinds(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1": "a loopback address", "127.8.9.10": "a loopback address", "::1": "a loopback address",
		"::ffff:127.0.0.1": "a loopback address",
		"10.1.2.3":         "a private address", "172.16.0.1": "a private address", "172.31.255.255": "a private address",
		"192.168.1.1": "a private address", "::ffff:192.168.1.1": "a private address",
		"fd00::1": "a private (unique local) address", "fc00::1": "a private (unique local) address",
		"169.254.169.254": "a link-local address", "fe80::1": "a link-local address",
		"224.0.0.1": "a multicast address", "239.1.2.3": "a multicast address", "ff02::1": "a multicast address",
		"0.0.0.0": "an unspecified address", "::": "an unspecified address",
		"100.64.0.1": "a shared (carrier-grade NAT) address", "255.255.255.255": "a broadcast address",
		"fec0::1": "a site-local address",
		"8.8.8.8": "", "172.32.0.1": "", "100.128.0.1": "", "2001:4860:4860::8888": "", "::ffff:8.8.8.8": "",
	} {
		ip := netip.MustParseAddr(addr)
		if got := classifyAddr(ip); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
		err := AllowList{}.checkAddress("tcp", netip.AddrPortFrom(ip, 80).String(), nil)
		if (err == nil) != (want == "") {
			t.Errorf("%s: dialer check %v", addr, err)
		}
	}
	if err := allow(t, "169.254.0.0/16").checkAddress("tcp", "169.254.169.254:80", nil); err != nil {
		t.Errorf("an allowed network: %v", err)
	}
}
