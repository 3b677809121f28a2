package opencode

import (
	"strconv"
	"strings"
)

// Unified diffs of a file's old and new text, as OpenCode's edit and
// write tools put them in their metadata (jsdiff's createTwoFilesPatch:
// an "Index:" line, a rule, ---/+++ headers naming the file, hunks with 4
// lines of context, "\ No newline at end of file" after a last line
// without one, a hunk of an empty side starting at line 0).

// diffContext is the number of unchanged lines around a change.
const diffContext = 4

// maxDiffEdits bounds the work of the line diff: past this many edits in
// the changed middle of a file, the middle is shown as removed and added
// whole (still a correct diff, only not the shortest).
const maxDiffEdits = 1000

// diffOp is one line of the edit script: ' ' kept, '-' removed, '+'
// added. a and b count the old and new lines before it.
type diffOp struct {
	kind byte
	line string // with its line ending, if it has one
	a, b int
}

// unifiedDiff returns the unified diff of old and new text of the file
// path and the number of lines it adds and removes.
func unifiedDiff(path, old, new string) (patch string, additions, deletions int) {
	ops := diffLines(splitLines(old), splitLines(new))
	var sb strings.Builder
	sb.WriteString("Index: " + path + "\n")
	sb.WriteString("===================================================================\n")
	sb.WriteString("--- " + path + "\n+++ " + path + "\n")
	for _, op := range ops {
		switch op.kind {
		case '+':
			additions++
		case '-':
			deletions++
		}
	}
	for _, h := range hunks(ops) {
		writeHunk(&sb, ops[h[0]:h[1]])
	}
	return sb.String(), additions, deletions
}

// splitLines cuts text into lines that keep their "\n"; the last one has
// none when the text does not end with a newline.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// diffLines is the edit script from a to b: the common head and tail kept,
// the middle by Myers' algorithm.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]diffOp, 0, len(a)+len(b)-pre-suf)
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{kind: ' ', line: a[i]})
	}
	ops = append(ops, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for i := len(a) - suf; i < len(a); i++ {
		ops = append(ops, diffOp{kind: ' ', line: a[i]})
	}
	na, nb := 0, 0
	for i := range ops {
		ops[i].a, ops[i].b = na, nb
		if ops[i].kind != '+' {
			na++
		}
		if ops[i].kind != '-' {
			nb++
		}
	}
	return ops
}

// myers is the shortest edit script from a to b (Myers, "An O(ND)
// Difference Algorithm"), or all of a removed and all of b added when it
// takes more than maxDiffEdits edits.
func myers(a, b []string) []diffOp {
	n, m := len(a), len(b)
	whole := func() []diffOp {
		ops := make([]diffOp, 0, n+m)
		for _, l := range a {
			ops = append(ops, diffOp{kind: '-', line: l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{kind: '+', line: l})
		}
		return ops
	}
	if n == 0 || m == 0 {
		return whole()
	}
	limit := min(n+m, maxDiffEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	// trace[d] is v before step d, for the diagonals -d-1..d+1.
	var trace [][]int
	for d := 0; d <= limit; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace)
			}
		}
	}
	return whole()
}

// backtrack walks the trace back from the end and returns the edits in
// order.
func backtrack(a, b []string, trace [][]int) []diffOp {
	x, y := len(a), len(b)
	var rev []diffOp
	for d := len(trace) - 1; d >= 0; d-- {
		vd := trace[d]
		at := func(k int) int { return vd[k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, diffOp{kind: ' ', line: a[x-1]})
			x--
			y--
		}
		if d == 0 {
			break
		}
		if x == prevX {
			rev = append(rev, diffOp{kind: '+', line: b[y-1]})
		} else {
			rev = append(rev, diffOp{kind: '-', line: a[x-1]})
		}
		x, y = prevX, prevY
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// hunks groups the changes of ops, with their context, into [start, end)
// ranges of ops; changes closer than twice the context share a hunk.
func hunks(ops []diffOp) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(0, i-diffContext)
		last := i // the last change of the hunk
		for j := i + 1; j < len(ops); j++ {
			if ops[j].kind == ' ' {
				continue
			}
			if j-last-1 > 2*diffContext {
				break
			}
			last = j
		}
		end := min(len(ops), last+1+diffContext)
		out = append(out, [2]int{start, end})
		i = end
	}
	return out
}

func writeHunk(sb *strings.Builder, ops []diffOp) {
	oldLines, newLines := 0, 0
	for _, op := range ops {
		if op.kind != '+' {
			oldLines++
		}
		if op.kind != '-' {
			newLines++
		}
	}
	oldStart, newStart := ops[0].a+1, ops[0].b+1
	if oldLines == 0 {
		oldStart--
	}
	if newLines == 0 {
		newStart--
	}
	sb.WriteString("@@ -" + strconv.Itoa(oldStart) + "," + strconv.Itoa(oldLines) +
		" +" + strconv.Itoa(newStart) + "," + strconv.Itoa(newLines) + " @@\n")
	for _, op := range ops {
		sb.WriteByte(op.kind)
		if line, ok := strings.CutSuffix(op.line, "\n"); ok {
			sb.WriteString(line + "\n")
		} else {
			sb.WriteString(op.line + "\n\\ No newline at end of file\n")
		}
	}
}
