package acpagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	acp "github.com/coder/acp-go-sdk"
)

// agentConn is a member's agent in one root run: the process, started on
// the first delegation that needs it and reused by the member's later
// delegations of the run (each a session of its own), and the ACP
// connection to it. The run's end stops it (spawn.Invocation.RunScoped).
type agentConn struct {
	n *Node

	mu      sync.Mutex
	ready   chan struct{} // closed once the start in progress has ended; nil: none yet
	proc    *process      // the agent, once started
	conn    *acp.ClientSideConnection
	caps    acp.AgentCapabilities
	err     error            // why the last start failed
	turns   map[string]*turn // ACP session id -> the prompt in progress in it
	bridge  *bridge          // the MCP server of the member's tools, once started
	stopped bool
}

func newAgentConn(n *Node) *agentConn {
	return &agentConn{n: n, turns: map[string]*turn{}}
}

// connect returns the connection to a running, initialized agent: the
// run's, or a new one when there is none yet or the last one exited.
func (a *agentConn) connect(ctx context.Context) (*acp.ClientSideConnection, error) {
	for {
		a.mu.Lock()
		if a.stopped {
			a.mu.Unlock()
			return nil, errors.New("the run has ended")
		}
		ready := a.ready
		if a.needStart() {
			// No agent, or it died: this caller starts one; others wait.
			ready = make(chan struct{})
			a.ready = ready
			a.mu.Unlock()
			proc, conn, caps, err := a.start(ctx)
			a.mu.Lock()
			a.proc, a.conn, a.caps, a.err = proc, conn, caps, err
			close(ready)
			a.mu.Unlock()
			return conn, err
		}
		a.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		a.mu.Lock()
		conn, err := a.conn, a.err
		a.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if conn != nil {
			return conn, nil
		}
	}
}

// needStart reports whether the caller must start the agent (a.mu
// held): none was started, the last start failed, or the agent exited.
// A start in progress is waited for instead.
func (a *agentConn) needStart() bool {
	if a.ready == nil {
		return true
	}
	select {
	case <-a.ready:
	default:
		return false
	}
	if a.proc == nil {
		return true
	}
	select {
	case <-a.proc.exited:
		return true
	default:
		return false
	}
}

// start starts the agent and initializes it, within the node's
// InitTimeout; an agent that fails is stopped, and the error shows the
// tail of its stderr.
func (a *agentConn) start(ctx context.Context) (*process, *acp.ClientSideConnection, acp.AgentCapabilities, error) {
	cfg := &a.n.cfg
	proc, err := startProcess(cfg.Command, cfg.Args, cfg.Dir, cfg.Env, cfg.Logger)
	if err != nil {
		return nil, nil, acp.AgentCapabilities{}, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	// The SDK reads the agent from the moment the connection is made and
	// logs through the logger SetLogger sets, unsynchronized: the
	// connection reads nothing before SetLogger has returned (an agent
	// that exits at once would otherwise race it).
	gate := make(chan struct{})
	conn := acp.NewClientSideConnection(client{a}, proc.stdin, gatedReader{proc.stdout, gate})
	conn.SetLogger(cfg.Logger.With("acp_agent", cfg.Name))
	close(gate)
	ictx, cancel := context.WithTimeoutCause(ctx, cfg.InitTimeout, fmt.Errorf("the agent did not answer initialize within %v", cfg.InitTimeout))
	defer cancel()
	res, err := conn.Initialize(ictx, acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo:      &acp.Implementation{Name: "agentpool", Version: "1"},
		ClientCapabilities: acp.ClientCapabilities{
			Fs:       acp.FileSystemCapabilities{ReadTextFile: cfg.AllowFileOperations, WriteTextFile: cfg.AllowFileOperations},
			Terminal: cfg.AllowTerminal,
		},
	})
	if err != nil {
		if c := context.Cause(ictx); c != nil {
			err = c
		}
		proc.stop(0)
		return nil, nil, acp.AgentCapabilities{}, fmt.Errorf("initialize %s: %v%s", cfg.Command, describeErr(err), proc.describe())
	}
	cfg.Logger.Debug("acpagent: agent initialized", "agent", cfg.Name, "protocol", res.ProtocolVersion, "load_session", res.AgentCapabilities.LoadSession)
	return proc, conn, res.AgentCapabilities, nil
}

// stop ends the run's agent (the run has ended): session/cancel is not
// needed, every prompt has been answered or abandoned.
func (a *agentConn) stop() {
	a.mu.Lock()
	a.stopped = true
	proc, b := a.proc, a.bridge
	a.mu.Unlock()
	if proc != nil {
		proc.stop(a.n.cfg.CancelGrace)
	}
	if b != nil {
		b.close()
	}
}

// capabilities are those the running agent answered initialize with.
func (a *agentConn) capabilities() acp.AgentCapabilities {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.caps
}

// serve mounts a delegation's MCP endpoint on the run's bridge, starting
// the bridge the first time, and returns its URL and the function that
// removes it.
func (a *agentConn) serve(h http.Handler) (string, func(), error) {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return "", nil, errors.New("the run has ended")
	}
	if a.bridge == nil {
		b, err := startBridge(a.n.cfg.Logger)
		if err != nil {
			a.mu.Unlock()
			return "", nil, err
		}
		a.bridge = b
	}
	b := a.bridge
	a.mu.Unlock()
	return b.add(h)
}

// describeProc is the note an error of the running agent gets: how it
// ended and its stderr's tail.
func (a *agentConn) describeProc() string {
	a.mu.Lock()
	proc := a.proc
	a.mu.Unlock()
	if proc == nil {
		return ""
	}
	return proc.describe()
}

// kill kills the agent at once (it did not answer session/cancel); the
// run's next delegation to the member starts a new one.
func (a *agentConn) kill() {
	a.mu.Lock()
	proc := a.proc
	a.mu.Unlock()
	if proc != nil {
		proc.kill()
		<-proc.exited
	}
}

// add and remove route the session/update notifications and requests of
// an ACP session to its turn.
func (a *agentConn) add(sid string, t *turn) {
	a.mu.Lock()
	a.turns[sid] = t
	a.mu.Unlock()
}

func (a *agentConn) remove(sid string) {
	a.mu.Lock()
	delete(a.turns, sid)
	a.mu.Unlock()
}

func (a *agentConn) turn(sid acp.SessionId) (*turn, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.turns[string(sid)]
	return t, ok
}

// gatedReader reads r once gate is closed.
type gatedReader struct {
	r    io.Reader
	gate <-chan struct{}
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

// describeErr gives an ACP error's message with its data, when it has.
func describeErr(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		s := re.Message
		if re.Data != nil {
			s += fmt.Sprintf(" (%v)", re.Data)
		}
		return s
	}
	return err.Error()
}
