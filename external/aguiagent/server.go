package aguiagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
	"github.com/agentpool/agentpool/internal/tailbuf"
)

// DefaultStartupTimeout is how long a started server may take to accept
// connections when StartupDelay is shorter.
const DefaultStartupTimeout = 30 * time.Second

// server is the AG-UI server a node starts itself (Config.StartupCommand,
// AgentPool's startup_command): started by the first delegation (again
// after it exited), ended by Close.
type server struct {
	mu     sync.Mutex
	tree   *proctree.Tree
	exited chan struct{}
	err    error // the root's exit, once exited is closed
	tail   *tailbuf.Buffer
	closed bool
}

// ensureServer starts the node's server when it has a startup command and
// none runs, and waits until its endpoint accepts connections.
func (n *Node) ensureServer(ctx context.Context) error {
	if n.cfg.StartupCommand == "" {
		return nil
	}
	s := &n.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("the agent is closed")
	}
	if s.tree != nil {
		select {
		case <-s.exited:
			_ = s.tree.End()
			s.tree = nil
		default:
			return nil
		}
	}
	s.tail = tailbuf.New(4 << 10)
	cmd := exec.Command("sh", "-c", n.cfg.StartupCommand)
	cmd.Dir, cmd.Stdout, cmd.Stderr = n.cfg.Dir, s.tail, s.tail
	tree := proctree.New(cmd)
	if err := tree.Start(); err != nil {
		return fmt.Errorf("startup_command: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		s.err = tree.Wait()
		close(exited)
	}()
	s.tree, s.exited = tree, exited
	if err := n.awaitServer(ctx, exited); err != nil {
		_ = tree.End()
		<-exited
		s.tree = nil
		return err
	}
	return nil
}

// awaitServer waits until the endpoint's host accepts a TCP connection,
// for StartupDelay or DefaultStartupTimeout, whichever is longer.
func (n *Node) awaitServer(ctx context.Context, exited <-chan struct{}) error {
	u, err := url.Parse(n.cfg.Endpoint)
	if err != nil {
		return err
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	limit := time.NewTimer(max(n.cfg.StartupDelay, DefaultStartupTimeout))
	defer limit.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var d net.Dialer
	for {
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		c, err := d.DialContext(dctx, "tcp", host)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-exited:
			return fmt.Errorf("startup_command %q exited (%v) before %s accepted connections: %s", n.cfg.StartupCommand, n.srv.err, host, strings.TrimSpace(n.srv.tail.String()))
		case <-limit.C:
			return fmt.Errorf("startup_command %q: %s accepted no connection within %s", n.cfg.StartupCommand, host, max(n.cfg.StartupDelay, DefaultStartupTimeout))
		case <-tick.C:
		}
	}
}

// Close ends the server the node started, with its whole process tree.
func (n *Node) Close() error {
	s := &n.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.tree == nil {
		return nil
	}
	err := s.tree.End()
	<-s.exited
	s.tree = nil
	return err
}
