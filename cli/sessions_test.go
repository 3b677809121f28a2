package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/session/memory"
	"github.com/agentpool/agentpool/session/sqlite"
)

// checkStream checks the invariants of docs/spec/EVENTS.md §3 on the stream
// that owner's consumer sees: spawn first (1), end last, exactly once,
// nothing of a session or its subtree after its end (2), depth (4), one
// wrapper per stream with the right attribution and path (5). parents and
// depths come from the session records.
func checkStream(t *testing.T, owner string, evs []event.Event, parents map[string]string, depths map[string]int) {
	t.Helper()
	started, ended := map[string]bool{}, map[string]bool{}
	pathTo := func(c string) []string {
		var p []string
		for c != owner && c != "" {
			p = append([]string{c}, p...)
			c = parents[c]
		}
		return p
	}
	inside := func(c, ancestor string) bool {
		for ; c != ""; c = parents[c] {
			if c == ancestor {
				return true
			}
		}
		return false
	}
	for i, e := range evs {
		producer := owner
		inner := e
		if w, ok := e.(event.Subagent); ok {
			if _, nested := w.Event.(event.Subagent); nested {
				t.Fatalf("event %d: a subagent event wraps a subagent event", i)
			}
			c := w.ChildSessionID
			if w.ParentSessionID != parents[c] || w.Depth != depths[c] {
				t.Errorf("event %d: wrapper of %s says parent %s depth %d; records say %s %d", i, c, w.ParentSessionID, w.Depth, parents[c], depths[c])
			}
			if want := pathTo(c); !slices.Equal(w.Path, want) {
				t.Errorf("event %d: path %v, want %v", i, w.Path, want)
			}
			producer, inner = c, w.Event
		}
		if producer != owner {
			if !started[producer] {
				t.Errorf("event %d (%s) of %s before its spawn_session_start", i, inner.Kind(), producer)
			}
			for c := range ended {
				if inside(producer, c) {
					t.Errorf("event %d (%s) of %s after the end of %s", i, inner.Kind(), producer, c)
				}
			}
		}
		switch v := inner.(type) {
		case event.SpawnSessionStart:
			c := v.ChildSessionID
			if started[c] {
				t.Errorf("event %d: second spawn_session_start for %s", i, c)
			}
			started[c] = true
			if v.ParentSessionID != producer || parents[c] != producer {
				t.Errorf("event %d: start of %s in the stream of %s, parent %s (record %s)", i, c, producer, v.ParentSessionID, parents[c])
			}
			if v.Depth != depths[producer]+1 || depths[c] != v.Depth {
				t.Errorf("event %d: start of %s at depth %d; parent depth %d, record %d", i, c, v.Depth, depths[producer], depths[c])
			}
		case event.SpawnSessionEnd:
			c := v.ChildSessionID
			if !started[c] || ended[c] {
				t.Errorf("event %d: end of %s (started %v, ended %v)", i, c, started[c], ended[c])
			}
			for k := range started {
				if k != c && inside(k, c) && !ended[k] {
					t.Errorf("event %d: %s ends before its descendant %s", i, c, k)
				}
			}
			ended[c] = true
		}
	}
	for c := range started {
		if !ended[c] {
			t.Errorf("%s never ended", c)
		}
	}
	for c := range parents {
		if c != owner && inside(c, owner) && !started[c] {
			t.Errorf("session %s never started in the stream", c)
		}
	}
}

func treeOf(t *testing.T, dir, db, root string) (*treeNode, map[string]string, map[string]int, []session.Session) {
	t.Helper()
	r := runCLI(t, dir, "sessions", "tree", "--db", db, "--json", root)
	if r.code != 0 {
		t.Fatalf("sessions tree: exit %d: %s", r.code, r.stderr)
	}
	var tree treeNode
	if err := json.Unmarshal([]byte(r.stdout), &tree); err != nil {
		t.Fatalf("tree json: %v\n%s", err, r.stdout)
	}
	parents, depths := map[string]string{}, map[string]int{}
	var all []session.Session
	var walk func(n *treeNode)
	walk = func(n *treeNode) {
		parents[n.ID], depths[n.ID] = n.ParentID, n.Depth
		all = append(all, n.Session)
		for _, c := range n.Children {
			if c.ParentID != n.ID || c.Depth != n.Depth+1 {
				t.Errorf("tree: %s under %s has parent %s depth %d (parent depth %d)", c.ID, n.ID, c.ParentID, c.Depth, n.Depth)
			}
			walk(c)
		}
	}
	walk(&tree)
	return &tree, parents, depths, all
}

func TestSessionsNestedRun(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	manifests := map[string][]string{
		"default":         nil,
		"agentpool-style": {"-c", mustAbs(t, "../config/testdata/agentpool-style.yaml")},
	}
	for name, cflag := range manifests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "data", "nested", "sessions.db") // directories are created
			args := append([]string{"run", "--db", db, "--output", "jsonl"}, cflag...)
			r := runCLI(t, dir, append(args, "How do agent pools work?")...)
			if r.code != 0 {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			live := r.stdout
			evs := decodeJSONL(t, live)
			root := evs[0].(event.RunStarted).SessionID

			// The tree: every session of the live stream, right parents and depths.
			_, parents, depths, all := treeOf(t, dir, db, root)
			seen := map[string]bool{root: true}
			for _, e := range evs {
				if w, ok := e.(event.Subagent); ok {
					seen[w.ChildSessionID] = true
				}
			}
			if len(all) != len(seen) || len(all) < 4 {
				t.Errorf("tree has %d sessions, the live stream %d", len(all), len(seen))
			}
			for _, s := range all {
				if !seen[s.ID] {
					t.Errorf("tree has %s, the live stream not", s.ID)
				}
				if s.Status != session.StatusCompleted || s.StopReason != event.StopCompleted {
					t.Errorf("%s (%s): %s/%s", s.AgentName, s.ID, s.Status, s.StopReason)
				}
			}
			if depths[root] != 0 || parents[root] != "" {
				t.Errorf("root depth %d parent %q", depths[root], parents[root])
			}
			text := runCLI(t, dir, "sessions", "tree", "--db", db, root)
			if text.code != 0 || strings.Count(strings.TrimSpace(text.stdout), "\n")+1 != len(all) {
				t.Errorf("sessions tree text (exit %d):\n%s", text.code, text.stdout)
			}
			for _, s := range all {
				if !strings.Contains(text.stdout, s.ID) || !strings.Contains(text.stdout, s.AgentName) {
					t.Errorf("tree text lacks %s %s", s.AgentName, s.ID)
				}
			}

			// The replay is the live stream, byte for byte, and keeps every invariant.
			rep := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", root)
			if rep.code != 0 {
				t.Fatalf("sessions events --tree: exit %d: %s", rep.code, rep.stderr)
			}
			if rep.stdout != live {
				t.Errorf("replay differs from the live stream")
				diffLines(t, live, rep.stdout)
			}
			checkStream(t, root, decodeJSONL(t, rep.stdout), parents, depths)

			// A subtree replays as its own consumer saw it: the same events of
			// the same sessions, in the same order, wrapped relative to it.
			mid := ""
			for _, s := range all {
				if s.Depth == 1 {
					mid = s.ID
				}
			}
			sub := runCLI(t, dir, "sessions", "events", "--db", db, "--json", "--tree", mid)
			if sub.code != 0 {
				t.Fatalf("sessions events --tree %s: exit %d: %s", mid, sub.code, sub.stderr)
			}
			subEvs := decodeJSONL(t, sub.stdout)
			checkStream(t, mid, subEvs, parents, depths)
			var want, got []string
			for _, e := range evs {
				sid, inner := event.Unwrap(root, e)
				if sid != root && isUnder(sid, mid, parents) {
					b, _ := event.Marshal(inner)
					want = append(want, sid+" "+string(b))
				}
			}
			for _, e := range subEvs {
				sid, inner := event.Unwrap(mid, e)
				b, _ := event.Marshal(inner)
				got = append(got, sid+" "+string(b))
			}
			if !slices.Equal(got, want) {
				t.Errorf("subtree replay of %s: %d events, live %d", mid, len(got), len(want))
			}

			// The session's own log holds only its own events.
			own := runCLI(t, dir, "sessions", "events", "--db", db, "--json", root)
			for _, e := range decodeJSONL(t, own.stdout) {
				if e.Kind() == event.KindSubagent {
					t.Fatal("a subagent event in the root's own log")
				}
			}
			if txt := runCLI(t, dir, "sessions", "events", "--db", db, root); txt.code != 0 || !strings.Contains(txt.stdout, "spawn_session_start") {
				t.Errorf("events text: exit %d\n%s", txt.code, txt.stdout)
			}
		})
	}
}

func isUnder(c, ancestor string, parents map[string]string) bool {
	for ; c != ""; c = parents[c] {
		if c == ancestor {
			return true
		}
	}
	return false
}

func diffLines(t *testing.T, a, b string) {
	t.Helper()
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			t.Errorf("first difference at line %d:\nlive:   %s\nreplay: %s", i+1, x, y)
			return
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestSessionsResumeListShowDelete(t *testing.T) {
	t.Parallel() // mostly waits on its CLI processes
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	manifest := filepath.Join(dir, "m.yaml")
	os.WriteFile(manifest, []byte(`
agents:
  boss:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_helper, args: {prompt: "help me"}}]
        - "first answer"
    workers: [helper]
  helper:
    model: {type: test, custom_output_text: "helped"}
`), 0o644)
	r := runCLI(t, dir, "run", "-c", manifest, "--db", db, "--output", "jsonl", "first question")
	if r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.stderr)
	}
	root := decodeJSONL(t, r.stdout)[0].(event.RunStarted).SessionID
	firstEvents := len(decodeJSONL(t, runCLI(t, dir, "sessions", "events", "--db", db, "--json", root).stdout))

	// Resume: the same session goes on with its history.
	r = runCLI(t, dir, "run", "-c", manifest, "--db", db, "--output", "jsonl", "--session", root, "second question")
	if r.code != 0 {
		t.Fatalf("resume: %d %s", r.code, r.stderr)
	}
	if got := decodeJSONL(t, r.stdout)[0].(event.RunStarted).SessionID; got != root {
		t.Fatalf("resumed run is in session %s, want %s", got, root)
	}
	show := runCLI(t, dir, "sessions", "show", "--db", db, "--json", root)
	var msgs []session.Message
	if err := json.Unmarshal([]byte(show.stdout), &msgs); err != nil {
		t.Fatalf("show --json: %v\n%s", err, show.stdout)
	}
	var users []string
	for _, m := range msgs {
		if m.Role == "user" && !m.Synthetic {
			users = append(users, m.Text())
		}
	}
	if !slices.Equal(users, []string{"first question", "second question"}) {
		t.Errorf("user messages after resume: %q", users)
	}
	recs := decodeJSONL(t, runCLI(t, dir, "sessions", "events", "--db", db, "--json", root).stdout)
	if len(recs) <= firstEvents || recs[firstEvents].Kind() != event.KindRunStarted {
		t.Errorf("the resumed run's events do not follow the first run's (%d, then %d)", firstEvents, len(recs))
	}
	text := runCLI(t, dir, "sessions", "show", "--db", db, root)
	for _, want := range []string{"first question", "second question", "first answer", "→ ask_helper", "↳ session"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, text.stdout)
		}
	}

	// list
	var roots, everything []session.Session
	json.Unmarshal([]byte(runCLI(t, dir, "sessions", "list", "--db", db, "--roots", "--json").stdout), &roots)
	json.Unmarshal([]byte(runCLI(t, dir, "sessions", "list", "--db", db, "--json").stdout), &everything)
	if len(roots) != 1 || roots[0].ID != root || len(everything) != 3 {
		t.Fatalf("list: %d roots, %d sessions", len(roots), len(everything))
	}
	if txt := runCLI(t, dir, "sessions", "list", "--db", db); txt.code != 0 || !strings.Contains(txt.stdout, root) || !strings.Contains(txt.stdout, "helper") {
		t.Errorf("list text:\n%s", txt.stdout)
	}

	// delete a child, then the root with everything under it
	child := ""
	for _, s := range everything {
		if s.ParentID == root {
			child = s.ID
			break
		}
	}
	if d := runCLI(t, dir, "sessions", "delete", "--db", db, child); d.code != 0 || !strings.Contains(d.stdout, "deleted") {
		t.Fatalf("delete child: %d %s %s", d.code, d.stdout, d.stderr)
	}
	json.Unmarshal([]byte(runCLI(t, dir, "sessions", "list", "--db", db, "--json").stdout), &everything)
	if len(everything) != 2 {
		t.Errorf("%d sessions after deleting a child", len(everything))
	}
	if d := runCLI(t, dir, "sessions", "delete", "--db", db, root); d.code != 0 {
		t.Fatalf("delete root: %d %s", d.code, d.stderr)
	}
	l := runCLI(t, dir, "sessions", "list", "--db", db, "--json")
	if strings.TrimSpace(l.stdout) != "[]" {
		t.Errorf("after deleting the root: %s", l.stdout)
	}
	for _, args := range [][]string{{"tree", root}, {"show", root}, {"events", root}, {"delete", root}} {
		r := runCLI(t, dir, append([]string{"sessions", "--db", db}, args...)...)
		if r.code == 0 || !strings.Contains(r.stderr, "session not found") {
			t.Errorf("%v on a deleted session: exit %d, %q", args, r.code, r.stderr)
		}
	}
}

func TestStorePath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "xdg"))
	m, err := config.Parse("m.yaml", []byte("agents:\n  a:\n    model: test\nstorage:\n  path: data/s.db\n"))
	if err != nil {
		t.Fatal(err)
	}
	m.Path = filepath.Join(dir, "proj", "agentpool.yaml")
	check := func(db string, m *config.Manifest, want string) {
		t.Helper()
		got, err := storePath(db, m)
		if err != nil || got != want {
			t.Errorf("storePath(%q) = %q, %v; want %q", db, got, err, want)
		}
	}
	check("/x/flag.db", m, "/x/flag.db")
	check("", m, filepath.Join(dir, "proj", "data", "s.db"))
	check("", config.Default(), filepath.Join(dir, "xdg", "agentpool", "agentpool.db"))
	check("", nil, filepath.Join(dir, "xdg", "agentpool", "agentpool.db"))
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("HOME", filepath.Join(dir, "home"))
	check("", nil, filepath.Join(dir, "home", ".local", "share", "agentpool", "agentpool.db"))
	mm, _ := config.Parse("m.yaml", []byte("agents:\n  a:\n    model: test\nstorage:\n  path: \":memory:\"\n"))
	check("", mm, memoryDB)
	pg, _ := config.Parse("m.yaml", []byte("agents:\n  a:\n    model: test\nstorage:\n  url: \"postgres://h/db\"\n"))
	check("", pg, "postgres://h/db")
	check("postgresql://other/db", pg, "postgresql://other/db")

	// openStore: the memory store for :memory:, SQLite (directory created) otherwise.
	st, err := openStore(":memory:", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*memory.Store); !ok {
		t.Errorf(":memory: opened %T", st)
	}
	st.Close()
	st, err = openStore("", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	// SQLite, wrapped so that deleting a session deletes its transcripts.
	if u, ok := st.(interface{ Unwrap() session.Store }); !ok {
		t.Errorf("storage.path opened %T, want the SQLite store wrapped by command.CleanTranscripts", st)
	} else if _, ok := u.Unwrap().(*sqlite.Store); !ok {
		t.Errorf("storage.path opened %T", u.Unwrap())
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(dir, "proj", "data", "s.db")); err != nil {
		t.Errorf("database not created: %v", err)
	}
}
