// Package httpsectest helps test the HTTP servers' connection rules
// inside a testing/synctest bubble: a listener whose connections are
// in-memory pipes (real sockets are not allowed in a bubble, and their
// time is real), and raw requests written and read by hand, so that a test
// can send half a request and watch what the server does with fake time.
package httpsectest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Listener is a net.Listener on loopback whose connections are net.Pipe
// pairs: Dial gives the client end, Accept the server end.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewListener returns an open Listener.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener: a loopback address, so that the servers'
// bind rule accepts the listener without a token.
func (l *Listener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000} }

// Dial connects to the listener. It returns once the server accepted the
// connection, or nil when the listener closed first; so it blocks while a
// server holds as many connections as it takes.
func (l *Listener) Dial() net.Conn {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client
	case <-l.done:
		client.Close()
		server.Close()
		return nil
	}
}

// Send writes s to c in the background (a pipe write blocks until the
// other end reads it) and returns a channel that gets the write's error.
func Send(c net.Conn, s string) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := io.WriteString(c, s)
		errc <- err
	}()
	return errc
}

// Response reads one response from c, body included.
func Response(c net.Conn) (*http.Response, string, error) {
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res, string(b), err
}

// CheckConnectionCap checks, inside a synctest bubble, that the server
// behind ln holds at most max connections: one more waits until another
// closes, and is then served (a GET of healthPath answers 200).
func CheckConnectionCap(t *testing.T, ln *Listener, max int, healthPath string) {
	t.Helper()
	held := make([]net.Conn, 0, max)
	for range max {
		held = append(held, ln.Dial())
	}
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	extra := make(chan net.Conn, 1)
	go func() { extra <- ln.Dial() }()
	synctest.Wait()
	select {
	case c := <-extra:
		c.Close()
		t.Fatalf("connection %d accepted while %d are open", max+1, max)
	default:
	}
	held[0].Close()
	synctest.Wait()
	var c net.Conn
	select {
	case c = <-extra:
	default:
		t.Fatal("the waiting connection was not accepted after one closed")
	}
	defer c.Close()
	Send(c, "GET "+healthPath+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if res, _, err := Response(c); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s on the late connection: %v %v", healthPath, res, err)
	}
}

// CheckStalledBody checks, inside a synctest bubble, that a POST to path
// whose body stops after its first bytes (start) is answered 408 after
// exactly timeout, saying so in its body, and that its connection is
// closed.
func CheckStalledBody(t *testing.T, ln *Listener, path, start string, timeout time.Duration) {
	t.Helper()
	c := ln.Dial()
	defer c.Close()
	begin := time.Now()
	Send(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"+start)
	c.SetReadDeadline(begin.Add(time.Hour))
	res, body, err := Response(c)
	if err != nil {
		t.Fatalf("no answer to a stalled body within an hour: %v", err)
	}
	if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, "request body") {
		t.Errorf("stalled body: %d %s", res.StatusCode, body)
	}
	if waited := time.Since(begin); waited != timeout {
		t.Errorf("answered after %s, want %s", waited, timeout)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection stays open after the timeout")
	}
}

// CheckUnauthorizedBeforeBody checks, inside a synctest bubble, that a
// POST to path without the server's token is answered 401 at once,
// without its body ever being sent, and that its connection is closed.
func CheckUnauthorizedBeforeBody(t *testing.T, ln *Listener, path string) {
	t.Helper()
	c := ln.Dial()
	defer c.Close()
	begin := time.Now()
	Send(c, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	c.SetReadDeadline(begin.Add(time.Hour))
	res, _, err := Response(c)
	if err != nil {
		t.Fatalf("no 401 without the body: %v", err)
	}
	if res.StatusCode != http.StatusUnauthorized || time.Since(begin) != 0 {
		t.Errorf("without the token: %d after %s, want 401 at once", res.StatusCode, time.Since(begin))
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection stays open after the 401")
	}
}
