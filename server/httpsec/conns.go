package httpsec

import (
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// What one client may hold of a server, by default.
const (
	// DefaultMaxConns bounds the connections a server holds at once.
	DefaultMaxConns = 256
	// DefaultBodyTimeout bounds reading one request, body included.
	DefaultBodyTimeout = time.Minute
	// HeaderTimeout bounds reading a request's headers.
	HeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection that sends no new request.
	IdleTimeout = 2 * time.Minute
)

// NewServer returns the http.Server of a protocol server, serving h, with
// every read from a client bounded in time:
//
//   - headers within HeaderTimeout, the whole request (body included)
//     within bodyTimeout (DefaultBodyTimeout when <= 0), so that a client
//     that sends headers and then a slow body, or none, gives its
//     connection up: the handler's read fails (see BodyTimedOut);
//   - an idle keep-alive connection is closed after IdleTimeout.
//
// The request deadline ends as soon as the body has been read to its end
// (net/http then lifts it to watch for the client going away), so it
// never cuts an event stream or a long run that answers the request.
// There is no WriteTimeout for the same reason: the servers bound each
// write of a stream themselves.
func NewServer(h http.Handler, bodyTimeout time.Duration, errorLog *log.Logger) *http.Server {
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyTimeout
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: HeaderTimeout,
		ReadTimeout:       bodyTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          errorLog,
	}
}

// BodyTimedOut reports whether err, from reading a request body, means
// that the body did not arrive in time (NewServer's deadline).
func BodyTimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

// LimitListener returns ln holding at most n connections at once
// (DefaultMaxConns when n <= 0). Past that, Accept waits for one to close:
// further clients wait in the kernel's accept queue, where they cost the
// process no file descriptor, so that no number of clients (with or
// without the token) can exhaust the descriptors of the process.
func LimitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		n = DefaultMaxConns
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	slots     chan struct{} // one element per connection held
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite passes a half-close on to a TCP connection: net/http uses it
// to let a client read a refusal before the connection is reset, which
// matters when the client is still sending a body nobody reads.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
