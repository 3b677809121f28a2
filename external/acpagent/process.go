package acpagent

import (
	"bufio"
	"errors"
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

// stderrTail is how much of an agent's stderr is kept for error messages.
const stderrTail = 4 << 10

// process is a running agent: its process tree and our ends of its pipes.
// Its two goroutines (wait, readStderr) end when the agent exits.
type process struct {
	cmd     *exec.Cmd
	tree    *proctree.Tree
	stdin   *os.File
	stdout  *os.File
	errPipe *os.File
	stderr  *tailbuf.Buffer
	log     *slog.Logger

	exited     chan struct{} // closed once the agent has been reaped and its tree ended
	exitErr    error
	stderrDone chan struct{}
	stopOnce   sync.Once
}

// startProcess starts the agent's command as the root of a process tree,
// in dir, with env added to this process's environment.
func startProcess(command string, args []string, dir string, env map[string]string, log *slog.Logger) (*process, error) {
	cmd := exec.Command(command, args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	var ends []*os.File
	closeAll := func() {
		for _, f := range ends {
			f.Close()
		}
	}
	pipes := make([][2]*os.File, 3)
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, err
		}
		ends = append(ends, r, w)
		pipes[i] = [2]*os.File{r, w}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0][0], pipes[1][1], pipes[2][1]
	tree := proctree.New(cmd) // last: it adds its mark to cmd.Env
	err := tree.Start()
	// The child's ends are the child's now.
	pipes[0][0].Close()
	pipes[1][1].Close()
	pipes[2][1].Close()
	if err != nil {
		pipes[0][1].Close()
		pipes[1][0].Close()
		pipes[2][0].Close()
		return nil, err
	}
	p := &process{
		cmd: cmd, tree: tree, stdin: pipes[0][1], stdout: pipes[1][0], errPipe: pipes[2][0],
		stderr: tailbuf.New(stderrTail), log: log,
		exited: make(chan struct{}), stderrDone: make(chan struct{}),
	}
	go p.wait()
	go p.readStderr()
	return p, nil
}

// wait reaps the agent, then ends what is left of its tree.
func (p *process) wait() {
	p.exitErr = p.tree.Wait()
	if err := p.tree.End(); err != nil {
		p.log.Error("acpagent: processes the agent started could not be killed", "pid", p.cmd.Process.Pid, "err", err)
	}
	close(p.exited)
}

// readStderr keeps the tail of the agent's stderr and logs it at debug.
func (p *process) readStderr() {
	defer close(p.stderrDone)
	r := bufio.NewReaderSize(p.errPipe, 4096)
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			p.stderr.Write(line)
			p.log.Debug("acpagent: agent stderr", "line", strings.TrimRight(string(line), "\r\n"))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// stop closes the agent's stdin (an ACP agent exits at its end), gives it
// grace to exit, then kills its tree; it returns once the agent is
// reaped, its tree ended and our pipe ends are closed.
func (p *process) stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		if !p.waitExit(grace) {
			p.tree.Kill()
			if !p.waitExit(10 * time.Second) {
				p.log.Error("acpagent: agent process survived SIGKILL", "pid", p.cmd.Process.Pid)
				<-p.exited
			}
		}
		p.stdout.Close()
		<-p.stderrDone // the tree is dead: stderr is at its end
		p.errPipe.Close()
	})
}

// kill kills the agent's tree at once (a hung agent); stop still cleans up.
func (p *process) kill() { p.tree.Kill() }

// waitExit reports whether the agent has exited within d.
func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// describe says how the agent ended, when it has, and shows the tail of
// its stderr: what a failed child's error carries.
func (p *process) describe() string {
	var b strings.Builder
	select {
	case <-p.exited:
		status := "exit status 0"
		if p.exitErr != nil {
			status = p.exitErr.Error()
		}
		b.WriteString(" (agent process: " + status + ")")
	default:
	}
	if t := strings.TrimSpace(p.stderr.String()); t != "" {
		b.WriteString("; its stderr ends with:\n" + t)
	}
	return b.String()
}
