package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// The load client of a server benchmark (server/opencode's and
// server/agui's BenchmarkScale) runs in a process of its own by default:
// the test binary re-executed, running only the test that serves it
// (ServeLoad). A real client (the OpenCode TUI, an AG-UI app) is another
// process, and one that shares the server's process shares its collector:
// its goroutines (net/http keeps a read and a write goroutine per
// keep-alive connection; 1,000 connections were 3,000 of the process's
// 4,010 goroutines), its allocations (line scanning, JSON decoding) and
// its heap become the server's GC work, whose mark assists and stack
// scans were the paced p99's tail on 2 cores. In its own process the
// client still competes for the cores, as a real one on the same machine
// would, but the server's CPU, GC and heap readings describe the server
// alone, and the client's CPU is reported beside them.
//
// LoadClientEnv=inprocess runs the same client in the benchmark's process
// instead (the figures before the split, for comparison in one binary);
// unset or "subprocess", its own process.
const LoadClientEnv = "AGENTPOOL_BENCH_CLIENT"

// loadParamsEnv carries the client's parameters (JSON) to the process
// that ServeLoad runs in; its presence is what makes that process a load
// client.
const loadParamsEnv = "AGENTPOOL_BENCH_LOADCLIENT"

// A LoadClient is a server benchmark's client: what it does before an op
// and in it. Its methods are called one at a time.
type LoadClient interface {
	// Setup prepares the next round (outside the benchmark's timer: the
	// OpenCode client creates its sessions).
	Setup() error
	// Round is one op: it returns the events the client has received
	// since the previous Round returned.
	Round() (events int, err error)
	// TakeLatencies returns the delivery latencies (ns) recorded since
	// the previous call (the client keeps them until then; a round does
	// not copy them) and forgets them.
	TakeLatencies() []int64
	// Close ends the client's streams and connections.
	Close() error
}

// NewLoadClient makes a LoadClient from its parameters (JSON), in the
// benchmark's process or in the client's own.
type NewLoadClient func(params json.RawMessage) (LoadClient, error)

// Load is the benchmark's handle on its client, wherever it runs.
type Load struct {
	local LoadClient // in process
	proc  *LoadProc  // or in its own
}

// RoundResult is what a client reports of one op.
type RoundResult struct {
	Events int
	// CPU is the client process's CPU time during the op; 0 in process,
	// where it is part of the benchmark process's own.
	CPU time.Duration
}

// Latencies summarises the latencies recorded since Discard.
type Latencies struct {
	N        int
	P50, P99 int64
}

// StartLoad starts a benchmark's client with params (JSON-encoded):
// through newClient in this process when LoadClientEnv says inprocess,
// otherwise in a new process running test (which must call ServeLoad
// with the same newClient). Close or Kill it.
func StartLoad(test string, params any, newClient NewLoadClient) (*Load, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	switch mode := os.Getenv(LoadClientEnv); mode {
	case "inprocess":
		c, err := newClient(raw)
		if err != nil {
			return nil, err
		}
		return &Load{local: c}, nil
	case "", "subprocess":
		p, err := StartLoadProc(test, raw)
		if err != nil {
			return nil, err
		}
		l := &Load{proc: p}
		var r loadReply
		if err := l.call("ready", &r); err != nil {
			p.Kill()
			return nil, err
		}
		return l, nil
	default:
		return nil, fmt.Errorf("%s=%q: want inprocess or subprocess", LoadClientEnv, mode)
	}
}

// InProcess reports whether the client runs in the benchmark's process.
func (l *Load) InProcess() bool { return l.local != nil }

// Setup prepares the next round (LoadClient.Setup).
func (l *Load) Setup() error {
	if l.local != nil {
		return l.local.Setup()
	}
	var r loadReply
	return l.call("setup", &r)
}

// Round runs one op (LoadClient.Round).
func (l *Load) Round() (RoundResult, error) {
	if l.local != nil {
		n, err := l.local.Round()
		return RoundResult{Events: n}, err
	}
	var r loadReply
	err := l.call("round", &r)
	return RoundResult{Events: r.Events, CPU: time.Duration(r.CPU)}, err
}

// Discard forgets the latencies recorded so far (the warm-up's).
func (l *Load) Discard() error {
	if l.local != nil {
		l.local.TakeLatencies()
		return nil
	}
	var r loadReply
	return l.call("discard", &r)
}

// Latencies summarises the latencies recorded since Discard. The client
// process keeps them and sends only the summary, so that the benchmark
// process neither decodes nor holds them.
func (l *Load) Latencies() (Latencies, error) {
	if l.local != nil {
		return summarise(l.local.TakeLatencies()), nil
	}
	var r loadReply
	err := l.call("latencies", &r)
	return Latencies{N: r.N, P50: r.P50, P99: r.P99}, err
}

// Close ends the client; in its own process, it returns that process's
// CPU time over its whole life (set-up and warm-up included).
func (l *Load) Close() (time.Duration, error) {
	if l.local != nil {
		return 0, l.local.Close()
	}
	return l.proc.Close()
}

// Kill ends the client's process at once (a no-op in process or after
// Close): for the benchmark's failure paths.
func (l *Load) Kill() {
	if l.proc != nil {
		l.proc.Kill()
	}
}

func (l *Load) call(op string, r *loadReply) error {
	if err := l.proc.Call(loadRequest{Op: op}, r); err != nil {
		return err
	}
	if r.Error != "" {
		return fmt.Errorf("load client, %s: %s", op, r.Error)
	}
	return nil
}

// loadRequest is a line from the benchmark to its client's process.
type loadRequest struct {
	Op string `json:"op"` // setup, round, discard, latencies
}

// loadReply is the client process's answer to one loadRequest.
type loadReply struct {
	Error  string `json:"error,omitempty"`
	Events int    `json:"events,omitempty"`
	CPU    int64  `json:"cpuNs,omitempty"` // the client's CPU in the round
	N      int    `json:"n,omitempty"`
	P50    int64  `json:"p50,omitempty"`
	P99    int64  `json:"p99,omitempty"`
}

func summarise(lats []int64) Latencies {
	if len(lats) == 0 {
		return Latencies{}
	}
	s := lats
	slices.Sort(s)
	pct := func(q float64) int64 { return s[int(q*float64(len(s)-1))] }
	return Latencies{N: len(s), P50: pct(0.50), P99: pct(0.99)}
}

// ServeLoad serves a benchmark as its client when this process was started
// as one (StartLoad); it returns false at once otherwise. The test that
// StartLoad names calls it and skips when it returns false. It reads
// requests on stdin until EOF (the benchmark closed it, or died) and
// answers each on stdout, one JSON line each.
func ServeLoad(newClient NewLoadClient) (bool, error) {
	raw, ok := os.LookupEnv(loadParamsEnv)
	if !ok {
		return false, nil
	}
	out := json.NewEncoder(os.Stdout)
	c, err := newClient(json.RawMessage(raw))
	if err != nil {
		out.Encode(loadReply{Error: err.Error()})
		return true, err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req loadRequest
		var r loadReply
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			r.Error = err.Error()
		} else {
			switch req.Op {
			case "ready":
			case "setup":
				err = c.Setup()
			case "round":
				cpu0 := CPUTime()
				r.Events, err = c.Round()
				r.CPU = int64(CPUTime() - cpu0)
			case "discard":
				c.TakeLatencies()
			case "latencies":
				s := summarise(c.TakeLatencies())
				r.N, r.P50, r.P99 = s.N, s.P50, s.P99
			default:
				err = fmt.Errorf("unknown op %q", req.Op)
			}
			if err != nil {
				r.Error = err.Error()
			}
		}
		if err := out.Encode(r); err != nil {
			c.Close()
			return true, err
		}
	}
	return true, errors.Join(in.Err(), c.Close())
}

// LoadProc is a load client's process: the running test binary started
// again to run one test (-test.run), its parameters in an environment
// variable, talking JSON lines: requests on its stdin, one reply each on
// its stdout. It is its own process group's leader and is killed when the
// benchmark's process dies (Linux: the parent-death signal), so that no
// client outlives its benchmark.
type LoadProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
	diag   *tail // its stderr and stdout lines that are no replies
	done   bool
	err    error // what Close or Kill found
}

// StartLoadProc starts the test named test of this binary in a new
// process, with params in its environment (ServeLoad reads them).
func StartLoadProc(test string, params json.RawMessage) (*LoadProc, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadParamsEnv+"="+string(params))
	cmd.SysProcAttr = loadProcAttr()
	p := &LoadProc{cmd: cmd, diag: &tail{max: 64 << 10}}
	cmd.Stderr = p.diag
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.stdout = bufio.NewScanner(out)
	p.stdout.Buffer(make([]byte, 0, 4<<10), 1<<20)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// Call sends req and decodes the reply into resp. Lines of the child's
// stdout that are no JSON object (the test framework's) are kept for the
// error. When the child ends before it answers, the error says how, with
// its output.
func (p *LoadProc) Call(req, resp any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return p.died(err)
	}
	for p.stdout.Scan() {
		line := p.stdout.Bytes()
		if len(line) == 0 || line[0] != '{' {
			p.diag.Write(append(line, '\n'))
			continue
		}
		return json.Unmarshal(line, resp)
	}
	return p.died(p.stdout.Err())
}

// died reaps a child that stopped answering and describes its end.
func (p *LoadProc) died(cause error) error {
	p.Kill()
	return fmt.Errorf("load client process ended (%v, %v); its output:\n%s", cause, p.err, p.diag.String())
}

// Close closes the child's stdin (ServeLoad returns, the test ends),
// reads its remaining output, waits for it and returns its CPU time (user
// and system, its whole life). A child that fails fails Close, with its
// output.
func (p *LoadProc) Close() (time.Duration, error) {
	if p.done {
		return 0, p.err
	}
	p.stdin.Close()
	for p.stdout.Scan() {
		p.diag.Write(append(p.stdout.Bytes(), '\n'))
	}
	p.done = true
	if err := p.cmd.Wait(); err != nil {
		p.err = fmt.Errorf("load client process: %v; its output:\n%s", err, p.diag.String())
		return 0, p.err
	}
	st := p.cmd.ProcessState
	return st.UserTime() + st.SystemTime(), nil
}

// Kill kills the child's process group and reaps the child (a no-op after
// Close or Kill).
func (p *LoadProc) Kill() {
	if p.done {
		return
	}
	p.done = true
	killGroup(p.cmd.Process)
	p.stdin.Close()
	p.err = p.cmd.Wait()
}

// tail keeps the last max bytes written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(b)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
