package ctlsock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Request is what a client asks a process.
type Request struct {
	Op      string `json:"op"`      // OpCancel
	Session string `json:"session"` // the session acted on
	By      string `json:"by"`      // who asks, for the session's record ("cli")
}

// OpCancel cancels one running session: a child alone, a root with its run.
const OpCancel = "cancel"

// Reply is a process's answer.
type Reply struct {
	// Error says why nothing was done; empty when it was.
	Error string `json:"error,omitempty"`
	// Ended reports that the session's run ended before the reply.
	Ended bool `json:"ended,omitempty"`
}

// Handler answers one request; ctx ends when the server closes.
type Handler func(ctx context.Context, req Request) Reply

const (
	maxRequest  = 4 << 10
	readTimeout = 10 * time.Second
	maxInFlight = 8
)

// Dir returns the directory of the user's control sockets, creating it.
func Dir() (string, error) {
	base := os.Getenv("XDG_RUNTIME_DIR")
	name := "agentpool"
	if base == "" {
		base, name = os.TempDir(), "agentpool-"+strconv.Itoa(os.Getuid())
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("control socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("control socket directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("control socket directory %s is not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("control socket directory %s is open to others (%v): it must be 0700", dir, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "", fmt.Errorf("control socket directory %s belongs to user %d, not to %d", dir, st.Uid, os.Getuid())
	}
	return dir, nil
}

// Path is the socket of process pid in dir.
func Path(dir string, pid int) string { return filepath.Join(dir, strconv.Itoa(pid)+".sock") }

// Server is a listening control socket.
type Server struct {
	ln     *net.UnixListener
	path   string
	handle Handler
	log    *slog.Logger
	ctx    context.Context
	stop   context.CancelFunc
	slots  chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// Listen serves handle on this process's socket in dir (Path(dir,
// os.Getpid())). A socket left there by a process that had the same id
// is replaced.
func Listen(dir string, handle Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	path := Path(dir, os.Getpid())
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("control socket: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Server{ln: ln, path: path, handle: handle, log: log, ctx: ctx, stop: stop, slots: make(chan struct{}, maxInFlight)}
	s.wg.Go(s.accept)
	return s, nil
}

// Path is the socket's file.
func (s *Server) Path() string { return s.path }

func (s *Server) accept() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				s.log.Warn("control socket: accept", "err", err)
			}
			return
		}
		s.wg.Go(func() { s.serve(c) })
	}
}

func (s *Server) serve(c *net.UnixConn) {
	defer c.Close()
	deadline := time.Now().Add(readTimeout)
	_ = c.SetReadDeadline(deadline)
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-s.ctx.Done():
		return
	case <-time.After(time.Until(deadline)):
		return
	}
	var req Request
	rep := Reply{}
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxRequest+1), 512).ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > maxRequest:
		rep.Error = fmt.Sprintf("request longer than %d bytes", maxRequest)
	case err != nil:
		return // the client went away or sent no full line in time
	default:
		if err := json.Unmarshal(line, &req); err != nil {
			rep.Error = "bad request: " + err.Error()
		} else {
			rep = s.handle(s.ctx, req)
		}
	}
	_ = c.SetWriteDeadline(time.Now().Add(readTimeout))
	out, _ := json.Marshal(rep)
	_, _ = c.Write(append(out, '\n'))
}

// Close stops the server, waits for its handlers and removes the socket.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		s.stop()
		err = s.ln.Close()
		s.wg.Wait()
	})
	return err
}

// Ask sends req to the socket at path and returns the answer. A process
// that is gone (no socket, or nobody listening) errors.Is
// ErrNoProcess.
func Ask(ctx context.Context, path string, req Request) (Reply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return Reply{}, fmt.Errorf("%w (%s)", ErrNoProcess, path)
		}
		return Reply{}, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	data, err := json.Marshal(req)
	if err != nil {
		return Reply{}, err
	}
	if _, err := c.Write(append(data, '\n')); err != nil {
		return Reply{}, err
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxRequest), 512).ReadSlice('\n')
	if err != nil {
		if ctx.Err() != nil {
			return Reply{}, ctx.Err()
		}
		return Reply{}, fmt.Errorf("control socket %s: no answer: %w", path, err)
	}
	var rep Reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return Reply{}, fmt.Errorf("control socket %s: bad answer: %w", path, err)
	}
	return rep, nil
}

// ErrNoProcess is Ask's error when no process listens on the socket.
var ErrNoProcess = errors.New("no agentpool process listens on its control socket")
