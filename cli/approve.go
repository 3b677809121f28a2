package cli

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentpool/agentpool/approval"
)

// terminalApprovals is the terminal as a front end of the approval
// broker: it asks about one pending request at a time, naming the agent
// by its path in the session tree and showing the tool's input, and
// answers with what the person types: [y]es (allow once), [a]lways
// (allow always: saved as a settings rule), [n]o (reject once; text after
// it is the reason the model reads) or [d]eny always (saved as a deny
// rule). A
// request settled meanwhile (a rule, the timeout, the run cancelled) is
// not asked about, or the question says so and moves on.
type terminalApprovals struct {
	broker  *approval.Broker
	lines   <-chan string // what the person types, line by line
	printer *approvalPrinter
	path    func(approval.Request) string // "lead › coder › writer"
	saved   string                        // where "always" is saved, for the message

	mu       sync.Mutex
	queue    []approval.Request
	settled  map[string]chan approval.Notice // of each queued or asked request
	wake     chan struct{}                   // a request was queued
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// readLines sends the lines of in until it ends. The goroutine lives as
// long as in: a read from a terminal cannot be interrupted, and the CLI
// exits after its run.
func readLines(in io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}

// startTerminalApprovals attaches the terminal to b and starts asking;
// Close detaches it.
func startTerminalApprovals(b *approval.Broker, lines <-chan string, printer *approvalPrinter, path func(approval.Request) string, saved string) *terminalApprovals {
	t := &terminalApprovals{broker: b, lines: lines, printer: printer, path: path, saved: saved,
		settled: map[string]chan approval.Notice{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	detach := b.Attach("terminal", t.notice)
	go func() {
		defer close(t.done)
		defer detach()
		t.loop()
	}()
	return t
}

// Close stops asking and detaches from the broker.
func (t *terminalApprovals) Close() {
	t.stopOnce.Do(func() { close(t.stop) })
	<-t.done
}

// notice is the broker's subscriber: it queues and unqueues, never waits.
func (t *terminalApprovals) notice(n approval.Notice) {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := n.Request.ID
	if n.Kind == approval.Asked {
		t.queue = append(t.queue, n.Request)
		t.settled[id] = make(chan approval.Notice, 1)
		select {
		case t.wake <- struct{}{}:
		default:
		}
		return
	}
	if ch, ok := t.settled[id]; ok {
		ch <- n
		delete(t.settled, id)
	}
	for i, q := range t.queue {
		if q.ID == id {
			t.queue = append(t.queue[:i:i], t.queue[i+1:]...)
			break
		}
	}
}

func (t *terminalApprovals) next() (approval.Request, chan approval.Notice, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.queue) == 0 {
		return approval.Request{}, nil, false
	}
	req := t.queue[0]
	t.queue = t.queue[1:]
	return req, t.settled[req.ID], true
}

func (t *terminalApprovals) loop() {
	for {
		req, settled, ok := t.next()
		if !ok {
			select {
			case <-t.wake:
				continue
			case <-t.stop:
				return
			}
		}
		t.ask(req, settled)
	}
}

// ask puts one question, holding the terminal (the live view does not
// draw over it) until it is answered or settled.
func (t *terminalApprovals) ask(req approval.Request, settled <-chan approval.Notice) {
	release := t.printer.hold()
	defer release()
	w := t.printer.w
	fmt.Fprintf(w, "\n? %s wants to run %s\n", t.path(req), req.Title)
	fmt.Fprint(w, describeInput(req.Input, "    "))
	for {
		fmt.Fprint(w, answerPrompt)
		var line string
		var open bool
		select {
		case line, open = <-t.lines:
		case n := <-settled:
			fmt.Fprintf(w, "\n  %s\n", settledElsewhere(n))
			return
		case <-t.stop:
			fmt.Fprintln(w)
			return
		}
		reply, message := parseAnswer(line)
		if !open {
			fmt.Fprintln(w)
			reply, message = approval.RejectOnce, "the terminal closed before an answer"
		}
		if reply == "" {
			continue // ask again
		}
		if err := t.broker.Reply(req.ID, reply, message, "the terminal"); err != nil {
			fmt.Fprintf(w, "  not applied: %v\n", err)
		} else if reply == approval.AllowAlways {
			fmt.Fprintf(w, "  %s is allowed from now on, for every agent (permissions.allow of %s)\n", req.Tool, t.saved)
		} else if reply == approval.RejectAlways {
			fmt.Fprintf(w, "  %s is denied from now on, for every agent (permissions.deny of %s)\n", req.Tool, t.saved)
		}
		return
	}
}

// answerPrompt is the question's last line: the answers it takes.
const answerPrompt = "  [y]es / [a]lways / [n]o [reason] / [d]eny always: "

// parseAnswer reads a typed answer: y, a, n or d (or the words), any
// case; after n (or no) the rest of the line, if any, is the reason the
// model reads. An unknown answer gives reply "" (ask again).
func parseAnswer(line string) (approval.Reply, string) {
	word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch strings.ToLower(word) {
	case "y", "yes":
		if rest == "" {
			return approval.AllowOnce, ""
		}
	case "a", "always":
		if rest == "" {
			return approval.AllowAlways, ""
		}
	case "n", "no":
		return approval.RejectOnce, strings.TrimSpace(rest)
	case "d", "deny":
		if r := strings.ToLower(strings.TrimSpace(rest)); r == "" || r == "always" {
			return approval.RejectAlways, ""
		}
	}
	return "", ""
}

// settledElsewhere says why a question ends without the person's answer.
func settledElsewhere(n approval.Notice) string {
	if n.Kind == approval.Cancelled {
		return "(the run was cancelled)"
	}
	verb := "allowed"
	if !n.Answer.Reply.Allows() {
		verb = "rejected"
	}
	if n.Answer.Message != "" {
		return fmt.Sprintf("(%s: %s)", verb, n.Answer.Message)
	}
	return fmt.Sprintf("(%s by %s)", verb, n.Answer.By)
}

// approvalPrinter writes the approvals' lines on stderr: one writer at a
// time, holding the live view's lock so that the view does not draw over
// them.
type approvalPrinter struct {
	mu   sync.Mutex
	w    io.Writer
	view sync.Locker // nil: no live view to hold
}

// hold takes the terminal until the returned function is called.
func (p *approvalPrinter) hold() (release func()) {
	p.mu.Lock()
	if p.view != nil {
		p.view.Lock()
	}
	return func() {
		if p.view != nil {
			p.view.Unlock()
		}
		p.mu.Unlock()
	}
}

func (p *approvalPrinter) println(line string) {
	defer p.hold()()
	fmt.Fprintln(p.w, line)
}

// allowEvery is the front end of --approve allow (and of
// approvals.unattended: allow without a terminal): it allows every
// request once and prints that it did.
func allowEvery(b *approval.Broker, printer *approvalPrinter, path func(approval.Request) string, why string) func(approval.Notice) {
	return func(n approval.Notice) {
		if n.Kind != approval.Asked {
			return
		}
		printer.println(fmt.Sprintf("✓ %s: %s allowed without asking (%s)", path(n.Request), n.Request.Title, why))
		// A subscriber may answer from its notice; an error is a reply
		// that came first.
		_ = b.Reply(n.Request.ID, approval.AllowOnce, "", why)
	}
}
