package mcp

import (
	"bufio"
	"github.com/agentpool/agentpool/internal/tailbuf"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentpool/agentpool/internal/proctree"
)

// stopGrace is how long a stdio server has to exit after its stdin is
// closed before its process tree is killed.
var stopGrace = 2 * time.Second

// stderrTail is how much of a server's stderr is kept for error messages.
const stderrTail = 8 << 10

// process is a running stdio server. Its stdin, stdout and stderr are
// plain pipes (no exec goroutines); its own goroutines end when it exits.
type process struct {
	cmd     *exec.Cmd
	tree    *proctree.Tree
	stdin   *os.File // our end of the server's stdin
	stdout  *os.File // our end of the server's stdout
	errPipe *os.File // our end of the server's stderr
	stderr  *tailbuf.Buffer
	log     *slog.Logger

	exited     chan struct{} // closed once the process has been reaped
	exitErr    error
	stderrDone chan struct{}
	stopOnce   sync.Once
}

// startProcess starts cfg's command as a process tree (which dies with
// it, see wait) and, on Linux, with SIGKILL as its parent-death signal.
func startProcess(cfg ServerConfig, log *slog.Logger) (*process, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Dir
	if len(cfg.Env) > 0 {
		cmd.Env = os.Environ()
		for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
			cmd.Env = append(cmd.Env, k+"="+cfg.Env[k])
		}
	}
	setDeathSignal(cmd)
	var files []*os.File // the six pipe ends
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		files = append(files, r, w)
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	inR, inW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	tree := proctree.New(cmd) // made last: it adds to cmd.Env
	err = tree.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		closeAll()
		return nil, err
	}
	p := &process{
		cmd: cmd, tree: tree, stdin: inW, stdout: outR, errPipe: errR,
		stderr: tailbuf.New(stderrTail), log: log,
		exited: make(chan struct{}), stderrDone: make(chan struct{}),
	}
	log.Debug("mcp: server process started", "pid", cmd.Process.Pid, "command", cfg.Command)
	go p.wait()
	go p.readStderr()
	return p, nil
}

// wait reaps the process, then kills what is left of its tree (children
// that would otherwise hold its stdout open, or be orphaned, those in a
// session of their own included).
func (p *process) wait() {
	p.exitErr = p.tree.Wait()
	if err := p.tree.End(); err != nil {
		p.log.Error("mcp: processes the server started could not be killed", "pid", p.cmd.Process.Pid, "error", err)
	}
	p.log.Debug("mcp: server process exited", "pid", p.cmd.Process.Pid, "status", p.exitStatus())
	close(p.exited)
}

// readStderr keeps the tail of stderr and logs its lines at debug.
func (p *process) readStderr() {
	defer close(p.stderrDone)
	r := bufio.NewReaderSize(p.errPipe, 4096)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			p.stderr.Write(line)
			p.log.Debug("mcp: server stderr", "line", strings.TrimRight(string(line), "\r\n"))
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// stop closes stdin, waits stopGrace for the server to exit, then kills
// its process tree; it returns once the process is reaped, its tree ended
// and its pipes are closed.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if !p.waitExit(stopGrace) {
			p.tree.Kill()
			if !p.waitExit(10 * time.Second) {
				p.log.Error("mcp: server process survived SIGKILL", "pid", p.cmd.Process.Pid)
			}
		}
		p.stdout.Close()
		// The tree is dead, so stderr is at EOF; bound the wait anyway.
		select {
		case <-p.stderrDone:
		case <-time.After(time.Second):
		}
		p.errPipe.Close()
		<-p.stderrDone
	})
}

// waitExit reports whether the process has exited within d.
func (p *process) waitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitStatus describes how the process ended; call after exited.
func (p *process) exitStatus() string {
	if p.exitErr == nil {
		return "exit status 0"
	}
	return p.exitErr.Error()
}

// describe is the note a start error gets: how the process ended and
// the tail of its stderr.
func (p *process) describe() string {
	var b strings.Builder
	if p.waitExit(0) {
		b.WriteString(" (server process " + p.exitStatus() + ")")
	}
	if tail := p.stderr.String(); tail != "" {
		b.WriteString("\nstderr:\n" + tail)
	}
	return b.String()
}
