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
	"sync"
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
