// Package httpsec is the HTTP security the protocol servers (server/agui,
// server/opencode) share:
//
//   - Bind rule: a server listens on a loopback address unless a bearer
//     token is set; binding any other address without one is refused
//     (CheckBind before listening, CheckListener in Serve).
//   - Token: once a token is set, every request must carry it as
//     "Authorization: Bearer <token>", compared in constant time; any other
//     request gets 401, whatever the address.
//   - CORS: none unless origins are configured. A request from a browser
//     page of another origin (an Origin header that is neither the server's
//     own nor a configured one) is refused with 403, so that a web page
//     cannot drive a local server (cross-site requests). Preflights of
//     configured origins are answered without the token (browsers never
//     send credentials on a preflight).
//   - Host check: a server bound to loopback without a token also refuses
//     requests whose Host is not a loopback name or address (DNS
//     rebinding).
//   - Refusals come before the body: a refused request's body is never
//     read or waited for; the connection is closed after the answer.
//   - Connections: NewServer bounds the time a client may take to send a
//     request (headers, then body) and LimitListener the connections held
//     at once, so that no client, with the token or without, holds a
//     connection or a file descriptor for long.
//
// The token never appears in a response, a log line or an error.
package httpsec

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// EnvToken is the environment variable the CLI reads the server token from
// (the --token flag takes precedence).
const EnvToken = "AGENTPOOL_SERVER_TOKEN"

// Options configure Handler.
type Options struct {
	// Token, when set, is required on every request ("Authorization:
	// Bearer <token>").
	Token string
	// CORSOrigins are the browser origins (scheme://host[:port]) allowed
	// to call the server; "*" allows any. None by default: no CORS headers
	// are ever sent and cross-origin browser requests are refused.
	CORSOrigins []string
	// LoopbackHost refuses requests whose Host header is not a loopback
	// name or address (for a server listening on loopback without a
	// token: DNS rebinding). WithListener sets it.
	LoopbackHost bool
}

// ErrTokenRequired is the error of a bind check that needs a token.
var ErrTokenRequired = errors.New("a server token is required to listen on a non-loopback address")

// CheckBind checks the address a server is about to listen on: a loopback
// address (127.0.0.0/8, ::1, localhost) is always fine; any other address
// (including an empty host, which means every interface) needs a token.
func CheckBind(addr, token string) error {
	if token != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if IsLoopbackHost(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("refusing to listen on %s (%s) without a token: %w; set --token or %s, or listen on 127.0.0.1",
		addr, shown, ErrTokenRequired, EnvToken)
}

// CheckListener is CheckBind for a listener that is already open: a TCP
// listener on a non-loopback address needs a token. Other listeners (a
// Unix socket) are local.
func CheckListener(ln net.Listener, token string) error {
	if token != "" {
		return nil
	}
	if a, ok := ln.Addr().(*net.TCPAddr); ok && !a.IP.IsLoopback() {
		return fmt.Errorf("refusing to serve on %s without a token: %w; set a token (--token or %s), or listen on 127.0.0.1",
			a, ErrTokenRequired, EnvToken)
	}
	return nil
}

// WithListener returns opts for a server that serves on ln: LoopbackHost
// is set when it listens on loopback without a token.
func WithListener(opts Options, ln net.Listener) Options {
	if opts.Token == "" {
		if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsLoopback() {
			opts.LoopbackHost = true
		}
	}
	return opts
}

// IsLoopbackHost reports whether host (a name or an address, without a
// port) is loopback: localhost, *.localhost, 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 { // a zone (fe80::1%eth0)
		host = host[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler wraps next with the checks of opts, in this order: Host (with
// LoopbackHost), CORS preflight and origin, token.
func Handler(next http.Handler, opts Options) http.Handler {
	var sum [sha256.Size]byte
	if opts.Token != "" {
		sum = sha256.Sum256([]byte(opts.Token))
	}
	origins := slices.Clone(opts.CORSOrigins)
	for i, o := range origins {
		origins[i] = strings.TrimSuffix(o, "/")
	}
	anyOrigin := slices.Contains(origins, "*")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opts.LoopbackHost {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !IsLoopbackHost(host) {
				refuse(w, r, http.StatusForbidden, "forbidden: this server only answers requests for a loopback host")
				return
			}
		}
		if origin := r.Header.Get("Origin"); origin != "" {
			allowed := anyOrigin || slices.Contains(origins, origin)
			if !allowed && !sameOrigin(origin, r.Host) {
				refuse(w, r, http.StatusForbidden, "forbidden: cross-origin requests from "+strconv.Quote(origin)+" are not allowed (see --cors-origin)")
				return
			}
			if allowed {
				h := w.Header()
				h.Set("Access-Control-Allow-Origin", origin)
				h.Add("Vary", "Origin")
				if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
					h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE, OPTIONS")
					allow := "Authorization, Content-Type"
					if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
						allow = req
					}
					h.Set("Access-Control-Allow-Headers", allow)
					h.Set("Access-Control-Max-Age", "600")
					w.WriteHeader(http.StatusNoContent)
					return
				}
			}
		}
		if opts.Token != "" && !authorized(r, sum) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentpool"`)
			refuse(w, r, http.StatusUnauthorized, "unauthorized: this server requires a bearer token (Authorization: Bearer <token>)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized compares the request's bearer token with the server's in
// constant time (both hashed first, so that not even the length leaks).
func authorized(r *http.Request, want [sha256.Size]byte) bool {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// sameOrigin reports whether origin is the server's own (a page it served).
func sameOrigin(origin, host string) bool {
	return origin == "http://"+host || origin == "https://"+host
}

// refuse answers a refused request. Its body, if any, stays unread, and
// "Connection: close" keeps net/http from reading it before the answer
// (it would otherwise drain a small body first, waiting for a client that
// may never send it).
func refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	b, _ := json.Marshal(map[string]string{"error": msg})
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
