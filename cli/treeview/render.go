package treeview

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/internal/termtext"
)

// Options say how a frame is drawn.
type Options struct {
	Now   time.Time // the instant of the frame, for elapsed times
	Frame int       // spinner frame
	Width int       // cut lines to this many cells; 0: no limit
	// Height is the most lines drawn (a terminal's height: an inline frame
	// taller than the screen cannot be redrawn); 0: no limit.
	Height int
	Color  bool // style with colours (false for golden files and logs)
	// Expand shows the children of finished sessions too (a stored tree),
	// and IDs shows each session's id, so a user can open it.
	Expand, IDs bool
	// Whole draws the final frame (once Finish was called) with every
	// session, as Expand does, when that fits in Height (always when
	// Height is 0); else folded as usual.
	Whole bool
	// AnswerLines is how many of the root's last answer lines are shown
	// below the tree while it runs; 0 shows none.
	AnswerLines int
}

// MaxListed is the most children listed under one session; beyond it the
// children are counted ("1,940 of 2,000 members done, 3 failed") and only
// the running and failed ones are listed, up to ListRunning and
// ListFailed, so that a 2,000-member team stays a screenful.
const (
	MaxListed   = 8
	ListRunning = 5
	ListFailed  = 3
)

var spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// styles holds the lipgloss styles of one frame; all plain without colour.
type styles struct {
	ok, bad, abort, run, dim, name lipgloss.Style
}

func newStyles(color bool) styles {
	if !color {
		p := lipgloss.NewStyle()
		return styles{p, p, p, p, p, p}
	}
	return styles{
		ok:    lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		bad:   lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		abort: lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		run:   lipgloss.NewStyle().Foreground(lipgloss.Color("6")),
		dim:   lipgloss.NewStyle().Faint(true),
		name:  lipgloss.NewStyle().Bold(true),
	}
}

// Render draws the tree as it is at o.Now: one line per shown session,
// then the root's latest answer lines while it runs.
func (m *Model) Render(o Options) string {
	if o.Whole && !o.Expand && m.Summary != nil {
		whole := o
		whole.Whole, whole.Expand, whole.Height = false, true, 0
		if f := m.Render(whole); o.Height <= 0 || strings.Count(f, "\n")+1 <= o.Height {
			return f
		}
	}
	r := renderer{o: o, st: newStyles(o.Color)}
	r.node(m.Root, "", "", true)
	tree := strings.Split(strings.TrimSuffix(r.b.String(), "\n"), "\n")
	var answer []string
	if m.Summary == nil && o.AnswerLines > 0 {
		if last := m.lastLines(o.AnswerLines, o.Width); len(last) > 0 {
			answer = append([]string{""}, last...)
		}
	}
	if o.Height > 0 {
		// The tree comes first: the answer gets at most a third.
		if keep := o.Height / 3; len(answer) > keep {
			answer = nil
			if keep >= 2 {
				answer = append([]string{""}, m.lastLines(keep-1, o.Width)...)
			}
		}
		if room := o.Height - len(answer); len(tree) > room {
			cut := len(tree) - room + 1
			tree = append(tree[:room-1], r.st.dim.Render("… "+strings.Replace(plural(cut, "line"), " ", " more ", 1)))
		}
	}
	return strings.Join(append(tree, answer...), "\n")
}

// lastLines is the end of the root's answer: its last n lines, wrapped
// to width cells (0: not wrapped), with its controls made visible
// (termtext.Text): it is model output.
func (m *Model) lastLines(n, width int) []string {
	ans := strings.TrimRight(termtext.Text(m.answer.String()), "\n")
	if ans == "" || n <= 0 {
		return nil
	}
	if width > 0 {
		ans = lipgloss.Wrap(ans, width, "")
	}
	lines := strings.Split(ans, "\n")
	return lines[max(0, len(lines)-n):]
}

type renderer struct {
	o  Options
	st styles
	b  strings.Builder
}

func (r *renderer) line(s string) {
	if r.o.Width > 0 && lipgloss.Width(s) > r.o.Width {
		s = lipgloss.NewStyle().MaxWidth(r.o.Width).Render(s)
	}
	r.b.WriteString(s)
	r.b.WriteByte('\n')
}

// node draws n (first: the prefix of its own line; rest: of the lines
// below it) and, when it is open, its children.
func (r *renderer) node(n *Node, first, rest string, root bool) {
	r.line(first + r.describe(n))
	if n.Done && !root && !r.o.Expand {
		return // a finished child is one line
	}
	entries := r.entries(n)
	for i, e := range entries {
		f, rs := rest+"├─ ", rest+"│  "
		if i == len(entries)-1 {
			f, rs = rest+"└─ ", rest+"   "
		}
		if e.node != nil {
			r.node(e.node, f, rs, false)
		} else {
			r.line(f + r.st.dim.Render(e.text))
		}
	}
}

// entry is one item under a session: a child, or a line of counts.
type entry struct {
	node *Node
	text string
}

// entries lists n's children, or, for a large fan-out, its counts with
// the running and failed children.
func (r *renderer) entries(n *Node) []entry {
	if len(n.Children) <= MaxListed {
		es := make([]entry, len(n.Children))
		for i, c := range n.Children {
			es[i] = entry{node: c}
		}
		return es
	}
	count := fmt.Sprintf("%s of %s %ss done", thousands(int64(n.finished)), thousands(int64(len(n.Children))), childNoun(n))
	if n.failed > 0 {
		count += fmt.Sprintf(", %s failed", thousands(int64(n.failed)))
	}
	es := []entry{{text: count}}
	var running, failed int
	for _, c := range n.Children {
		if !c.Done {
			if running++; running <= ListRunning {
				es = append(es, entry{node: c})
			}
		}
	}
	if running > ListRunning {
		es = append(es, entry{text: fmt.Sprintf("… %s more running", thousands(int64(running-ListRunning)))})
	}
	for _, c := range n.Children {
		if c.Done && c.Stop != event.StopCompleted && c.Stop != event.StopMaxTokens {
			if failed++; failed <= ListFailed {
				es = append(es, entry{node: c})
			}
		}
	}
	if failed > ListFailed {
		es = append(es, entry{text: fmt.Sprintf("… %s more failed", thousands(int64(failed-ListFailed)))})
	}
	return es
}

// childNoun names n's children: a team's are its members.
func childNoun(n *Node) string {
	if n.Mechanism == "team" || len(n.Children) > 0 && n.Children[0].Mechanism == "member" {
		return "member"
	}
	return "session"
}

// describe is the line of one session. What the events carry (names,
// tool names, errors, ids) goes through termtext.Line: a control
// character in it is shown, never acted on, and the line stays one line.
func (r *renderer) describe(n *Node) string {
	st := r.st
	name := termtext.Line(n.Name)
	if name == "" {
		name = "run"
	}
	parts := []string{}
	head := st.name.Render(name)
	if n.Mechanism != "" {
		head += " " + st.dim.Render("["+termtext.Line(n.Mechanism)+"]")
	}
	tokens := subtreeTokens(n)
	cost := subtreeCost(n)
	if !n.Done {
		head = st.run.Render(spinner[r.o.Frame%len(spinner)]) + " " + head
		parts = append(parts, head, duration(r.o.Now.Sub(n.Start)))
		act := termtext.Line(n.activity)
		switch {
		case act != "":
		case len(n.Children) > 0 && n.finished < len(n.Children):
			// A team has no turns of its own: it waits on its members.
			act = fmt.Sprintf("waiting on %s", plural(len(n.Children)-n.finished, childNoun(n)))
		case n.ToolUses > 0 || len(n.Children) > 0:
			act = "thinking"
		default:
			act = "starting"
		}
		parts = append(parts, act)
	} else {
		parts = append(parts, r.icon(n.Stop)+" "+head, string(n.Stop))
		if n.ToolUses > 0 {
			parts = append(parts, plural(n.ToolUses, "tool use"))
		}
	}
	// A node's figures are its subtree's; a node with children also
	// shows its own part, when it differs (a budget counts the subtree).
	if tokens > 0 {
		s := thousands(tokens) + " tok"
		if n.Done && len(n.Children) > 0 && n.Tokens != tokens {
			s += " (own " + thousands(n.Tokens) + ")"
		}
		parts = append(parts, s)
	}
	if cost > 0 {
		s := fmt.Sprintf("$%.4f", cost)
		if n.Done && len(n.Children) > 0 && n.Cost != cost {
			s += fmt.Sprintf(" (own $%.4f)", n.Cost)
		}
		parts = append(parts, s)
	}
	if n.Done {
		parts = append(parts, duration(n.Duration))
	}
	if r.o.IDs && n.ID != "" {
		parts = append(parts, st.dim.Render(termtext.Line(n.ID)))
	}
	s := strings.Join(parts, st.dim.Render(" · "))
	if n.Err != "" && n.Stop != event.StopCompleted {
		s += st.bad.Render(": " + oneLine(termtext.Line(n.Err), 100))
	}
	return s
}

func (r *renderer) icon(s event.StopReason) string {
	switch s {
	case event.StopCompleted, event.StopMaxTokens:
		return r.st.ok.Render("✓")
	case event.StopAborted:
		return r.st.abort.Render("⊘")
	}
	return r.st.bad.Render("✗")
}

// duration is a short elapsed time: 40ms, 12.3s, 2m05s, 1h02m.
func duration(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// thousands writes n with comma separators: 12,345.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	b.WriteString(s[:pre])
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return thousands(int64(n)) + " " + what + "s"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
