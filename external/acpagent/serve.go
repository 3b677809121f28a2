package acpagent

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/server/httpsec"
)

// ServedName is the name of the MCP server through which agentpool
// serves a member's tools to its agent (session/new mcpServers). Agents
// name its tools after it: opencode as agentpool_<tool>, Claude Code as
// mcp__agentpool__<tool>. A member's own MCP server may not take it.
const ServedName = "agentpool"

// Bounds of the served MCP server.
const (
	// maxServedRequest bounds one request's body (a tool call's
	// arguments: a Write's content is the largest).
	maxServedRequest = 4 << 20
	// maxServedConns bounds the connections the agent holds at once.
	maxServedConns = 32
	// servedShutdown is how long the run's end waits for requests in
	// flight (every call has ended with its turn by then: what is left
	// is answering refusals).
	servedShutdown = 5 * time.Second
)

// bridge is the HTTP side of the MCP server a member's agent reaches in
// one root run: a listener on 127.0.0.1, started by the first delegation
// that serves tools, closed with the run's agent (agentConn.stop). Each
// delegation has a route of its own, under an unguessable path
// (/mcp/<token>) that only its session/new names, so that every call is
// the call of one child session; a route is removed when its turn ends.
type bridge struct {
	log    *slog.Logger
	srv    *http.Server
	addr   string
	served chan struct{} // closed once Serve has returned
	// inflight counts the requests being served: close waits for them,
	// those the server's Close cut short included.
	inflight sync.WaitGroup

	mu     sync.Mutex
	routes []*route
	closed bool
}

// route is one delegation's MCP endpoint.
type route struct {
	token string
	h     http.Handler
}

// startBridge listens on a free loopback port and serves routes there.
func startBridge(log *slog.Logger) (*bridge, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("serve the member's tools: %w", err)
	}
	b := &bridge{log: log, addr: ln.Addr().String(), served: make(chan struct{})}
	// Loopback Host names only (DNS rebinding), no cross-origin browser
	// requests, bounded reads and connections: httpsec's rules for a
	// loopback server without a token (the route's path is the token).
	h := httpsec.Handler(http.HandlerFunc(b.serveHTTP), httpsec.Options{LoopbackHost: true})
	b.srv = httpsec.NewServer(h, 0, slog.NewLogLogger(log.Handler(), slog.LevelDebug))
	go func() {
		defer close(b.served)
		if err := b.srv.Serve(httpsec.LimitListener(ln, maxServedConns)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("acpagent: the served MCP server stopped", "err", err)
		}
	}()
	return b, nil
}

// add mounts h under a new token and returns its URL and the function
// that removes it (requests to it are then refused with 404).
func (b *bridge) add(h http.Handler) (string, func(), error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, err
	}
	r := &route{token: base64.RawURLEncoding.EncodeToString(raw[:]), h: h}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return "", nil, errors.New("the run has ended")
	}
	b.routes = append(b.routes, r)
	remove := func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for i, x := range b.routes {
			if x == r {
				b.routes = append(b.routes[:i], b.routes[i+1:]...)
				return
			}
		}
	}
	return "http://" + b.addr + "/mcp/" + r.token, remove, nil
}

// serveHTTP routes a request by its token, compared in constant time
// with every route's.
func (b *bridge) serveHTTP(w http.ResponseWriter, r *http.Request) {
	b.inflight.Add(1)
	defer b.inflight.Done()
	token, ok := strings.CutPrefix(r.URL.Path, "/mcp/")
	var h http.Handler
	if ok {
		b.mu.Lock()
		for _, x := range b.routes {
			if subtle.ConstantTimeCompare([]byte(x.token), []byte(token)) == 1 {
				h = x.h
			}
		}
		b.mu.Unlock()
	}
	if h == nil {
		if r.ContentLength != 0 {
			w.Header().Set("Connection", "close") // do not wait for a body nobody reads
		}
		http.Error(w, "no such MCP endpoint (the delegation it served has ended)", http.StatusNotFound)
		return
	}
	h.ServeHTTP(w, r)
}

// close stops the listener and waits for the requests in flight and for
// Serve to return: nothing of the bridge outlives the run.
func (b *bridge) close() {
	b.mu.Lock()
	b.closed = true
	b.routes = nil
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), servedShutdown)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		b.log.Warn("acpagent: the served MCP server did not shut down in time; closing it", "err", err)
		b.srv.Close()
	}
	<-b.served
	// No request starts after Shutdown or Close has returned.
	b.inflight.Wait()
}
