package opencode

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRootsShareNoLock: while one root session's state is held (its lock
// taken, as by a run whose events are being mapped), another root is
// created, prompted, runs to its end and is listed, with its events on
// the stream: no lock of the server is shared by the sessions. Then the
// first root, let go, runs as well.
func TestRootsShareNoLock(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  echo:
    model: {type: scripted, turns: [{text: "answer"}]}
`)
	s, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	held := str(createSession(t, base, "")["id"])
	mustCall(t, 200, "POST", base+"/session/"+held+"/message", promptBody("first"))

	st := s.facts.get(held)
	if st == nil {
		t.Fatal("no state for a session of this server")
	}
	st.mu.Lock()
	locked := true
	defer func() {
		if locked {
			st.mu.Unlock()
		}
	}()

	// Everything below would wait for st.mu if any of it shared a lock
	// with the held session.
	other := str(createSession(t, base, "")["id"])
	ans := mustCall(t, 200, "POST", base+"/session/"+other+"/message", promptBody("second"))
	if get(arr(get(ans, "parts"))[1], "text") != "answer" {
		t.Fatalf("the other root's answer %v", ans)
	}
	ev.wait(isType("session.idle", other), 10*time.Second)
	if msgs := arr(mustCall(t, 200, "GET", base+"/session/"+other+"/message", "")); len(msgs) != 2 {
		t.Fatalf("the other root has %d messages, want 2", len(msgs))
	}
	if status := obj(mustCall(t, 200, "GET", base+"/session/status", "")); len(status) != 0 {
		t.Fatalf("status while nothing runs: %v", status)
	}
	mustCall(t, 200, "GET", base+"/session", "")
	mustCall(t, 200, "GET", base+"/session/"+other+"/todo", "")

	st.mu.Unlock()
	locked = false
	mustCall(t, 200, "POST", base+"/session/"+held+"/message", promptBody("third"))
	if msgs := arr(mustCall(t, 200, "GET", base+"/session/"+held+"/message", "")); len(msgs) != 4 {
		t.Fatalf("the held root has %d messages after its second prompt, want 4", len(msgs))
	}
}

// maxMethods is the most methods a type of the package may have (issue
// 32): a type past it does more than one thing.
const maxMethods = 30

// TestNoTypeOverThirtyMethods counts the method set of every type the
// package declares (its own methods and those promoted from the types it
// embeds) in the non-test sources: none has more than maxMethods.
func TestNoTypeOverThirtyMethods(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]int{}         // type -> its declared methods
	embeds := map[string][]string{} // type -> the package's types it embeds
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) == 1 {
					own[typeName(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					ts, ok := sp.(*ast.TypeSpec)
					if !ok {
						continue
					}
					own[ts.Name.Name] += 0
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fd := range st.Fields.List {
						if len(fd.Names) == 0 {
							embeds[ts.Name.Name] = append(embeds[ts.Name.Name], typeName(fd.Type))
						}
					}
				}
			}
		}
	}
	var count func(typ string, seen map[string]bool) int
	count = func(typ string, seen map[string]bool) int {
		if seen[typ] {
			return 0
		}
		seen[typ] = true
		n := own[typ]
		for _, e := range embeds[typ] {
			n += count(e, seen)
		}
		return n
	}
	var names []string
	for typ := range own {
		names = append(names, typ)
	}
	sort.Strings(names)
	checked := 0
	for _, typ := range names {
		n := count(typ, map[string]bool{})
		if n > maxMethods {
			t.Errorf("type %s has %d methods (own and promoted), more than %d", typ, n, maxMethods)
		}
		if n > 0 {
			checked++
			t.Logf("%-14s %2d methods", typ, n)
		}
	}
	if own["Server"] == 0 || checked < 5 {
		t.Fatalf("counted the methods of %d types (Server: %d): the sources were not read", checked, own["Server"])
	}
}

// typeName is the name of a receiver or embedded field's type: T, *T,
// T[P] and pkg.T (the last is not one of the package's).
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.IndexExpr:
		return typeName(e.X)
	case *ast.IndexListExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return "." + e.Sel.Name
	}
	return ""
}

// TestHubIdsAscendUnderConcurrentPublishers: runs publish at once, from
// many goroutines, with no lock of the hub; every stream gets every event
// once, each session's events in their order, and the ids a stream writes
// ascend (each stream numbers the events it writes).
func TestHubIdsAscendUnderConcurrentPublishers(t *testing.T) {
	const publishers, each = 8, 200
	h := newHub(publishers * each)
	subs := []*subscriber{
		h.subscribe("", false, lifecycle("", "server.connected")),
		h.subscribe("", true, lifecycle("", "server.connected")),
	}
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			for i := range each {
				h.publish(&busEvent{typ: "session.updated", session: fmt.Sprintf("ses_%d", p), props: []byte(strconv.Itoa(i))})
			}
		})
	}
	wg.Wait()
	idRE := regexp.MustCompile(`"id":"(evt_[^"]+)"`)
	for _, sub := range subs {
		var ids []string
		next := map[string]int{} // session -> the next props it must carry
		for n := 0; n < publishers*each; {
			batch, ok := take(sub, context.Background(), nil)
			if !ok {
				t.Fatal("take failed")
			}
			for _, e := range batch {
				if e.session == "" {
					continue // server.connected
				}
				if k := next[e.session]; string(e.props) != strconv.Itoa(k) {
					t.Fatalf("session %s: event %s after %d of its events", e.session, e.props, k)
				}
				next[e.session]++
				n++
			}
			for _, m := range idRE.FindAllSubmatch(sub.appendBatch(nil, batch, time.Now()), -1) {
				if id := string(m[1]); len(ids) > 0 && id <= ids[len(ids)-1] {
					t.Fatalf("id %s after %s", id, ids[len(ids)-1])
				}
				ids = append(ids, string(m[1]))
			}
		}
		if len(ids) != publishers*each+1 {
			t.Fatalf("%d ids written, want %d", len(ids), publishers*each+1)
		}
	}
	h.close()
}

// TestRunGateWaitsForEveryAdmittedRun: runs are admitted while the gate
// closes; none is admitted after close began, and close returns only
// after every admitted run ended (wg.Add never races wg.Wait: the race
// detector would say so).
func TestRunGateWaitsForEveryAdmittedRun(t *testing.T) {
	var g runGate
	var admitted, ended atomic.Int64
	release := make(chan struct{})
	var callers sync.WaitGroup
	for range 64 {
		callers.Go(func() {
			if g.enter() {
				admitted.Add(1)
				go func() {
					<-release
					ended.Add(1)
					g.wg.Done()
				}()
			}
		})
	}
	closed := make(chan struct{})
	go func() {
		g.close()
		close(closed)
	}()
	callers.Wait()
	close(release)
	<-closed
	if a, e := admitted.Load(), ended.Load(); a != e {
		t.Fatalf("close returned with %d of %d admitted runs ended", e, a)
	}
	if g.enter() {
		t.Fatal("a run was admitted after close")
	}
}
