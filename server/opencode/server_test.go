package opencode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/session"
)

func TestInfoRoutes(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{})

	h := mustCall(t, 200, "GET", base+"/global/health", "")
	mustMatchResponse(t, "get", "/global/health", "200", h)
	if get(h, "version") != "test" {
		t.Fatalf("health %v", h)
	}

	path := mustCall(t, 200, "GET", base+"/path?directory="+url.QueryEscape("/tmp/proj"), "")
	mustMatchResponse(t, "get", "/path", "200", path)
	if get(path, "directory") != "/tmp/proj" || get(path, "worktree") != "/tmp/proj" {
		t.Fatalf("path %v", path)
	}
	if d := get(mustCall(t, 200, "GET", base+"/path", ""), "directory"); d != "/work/project" {
		t.Fatalf("default directory %v", d)
	}
	// The SDK names the directory in a header on writes.
	if d := get(mustCall(t, 200, "GET", base+"/path", "", "x-opencode-directory", url.PathEscape("/tmp/with space")), "directory"); d != "/tmp/with space" {
		t.Fatalf("header directory %v", d)
	}

	proj := mustCall(t, 200, "GET", base+"/project/current", "")
	mustMatchResponse(t, "get", "/project/current", "200", proj)

	agents := arr(mustCall(t, 200, "GET", base+"/agent", ""))
	mustMatchResponse(t, "get", "/agent", "200", agents)
	var names []string
	for _, a := range agents {
		names = append(names, str(get(a, "name")))
		if get(a, "name") == "lead" && get(a, "mode") != "primary" {
			t.Fatalf("default agent %v", a)
		}
	}
	if want := strings.Join(p.NodeNames(), ","); strings.Join(names, ",") != want {
		t.Fatalf("agents %v, want %s", names, want)
	}

	provs := mustCall(t, 200, "GET", base+"/config/providers", "")
	mustMatchResponse(t, "get", "/config/providers", "200", provs)
	ps := arr(get(provs, "providers"))
	if len(ps) != 1 || get(ps[0], "id") != "agentpool" || get(provs, "default", "agentpool") != "test" {
		t.Fatalf("providers %v", provs)
	}

	cfg := mustCall(t, 200, "GET", base+"/config", "")
	if get(cfg, "default_agent") != "lead" || get(cfg, "model") != "agentpool/test" || get(cfg, "agent", "squad", "mode") != "all" {
		t.Fatalf("config %v", cfg)
	}
	st := mustCall(t, 200, "GET", base+"/session/status", "")
	mustMatchResponse(t, "get", "/session/status", "200", st)
	if len(obj(st)) != 0 {
		t.Fatalf("status %v", st)
	}
}

func TestSessionCRUD(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")

	root := createSession(t, base, `{"title":"first"}`)
	sid := str(root["id"])
	if !strings.HasPrefix(sid, "ses_") || root["title"] != "first" || root["directory"] != "/work/project" || root["parentID"] != nil {
		t.Fatalf("created %v", root)
	}
	other := createSessionIn(t, base, "/tmp/elsewhere", "")
	if other["directory"] != "/tmp/elsewhere" || !strings.HasPrefix(str(other["title"]), defaultTitlePrefix) {
		t.Fatalf("created %v", other)
	}
	child := createSession(t, base, fmt.Sprintf(`{"parentID":%q,"title":"kid"}`, sid))
	if child["parentID"] != sid || child["directory"] != "/work/project" {
		t.Fatalf("child %v", child)
	}
	// Session ids are descending: the newest sorts first.
	if !(str(child["id"]) < str(other["id"]) && str(other["id"]) < sid) {
		t.Fatalf("ids do not descend: %s %s %s", sid, other["id"], child["id"])
	}

	got := mustCall(t, 200, "GET", base+"/session/"+sid, "")
	mustMatchResponse(t, "get", "/session/{sessionID}", "200", got)

	all := arr(mustCall(t, 200, "GET", base+"/session", ""))
	mustMatchResponse(t, "get", "/session", "200", all)
	if len(all) != 3 || get(all[0], "id") != child["id"] {
		t.Fatalf("list %v", all)
	}
	if roots := arr(mustCall(t, 200, "GET", base+"/session?roots=true", "")); len(roots) != 2 {
		t.Fatalf("roots %v", roots)
	}
	if one := arr(mustCall(t, 200, "GET", base+"/session?roots=true&limit=1", "")); len(one) != 1 || get(one[0], "id") != other["id"] {
		t.Fatalf("limit %v", one)
	}
	if here := arr(mustCall(t, 200, "GET", base+"/session?directory=/tmp/elsewhere", "")); len(here) != 1 || get(here[0], "id") != other["id"] {
		t.Fatalf("directory filter %v", here)
	}
	if found := arr(mustCall(t, 200, "GET", base+"/session?search=KID", "")); len(found) != 1 {
		t.Fatalf("search %v", found)
	}

	kids := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/children", ""))
	mustMatchResponse(t, "get", "/session/{sessionID}/children", "200", kids)
	if len(kids) != 1 || get(kids[0], "id") != child["id"] || get(kids[0], "parentID") != sid {
		t.Fatalf("children %v", kids)
	}

	upd := mustCall(t, 200, "PATCH", base+"/session/"+sid, `{"title":"renamed"}`)
	mustMatchResponse(t, "patch", "/session/{sessionID}", "200", upd)
	if get(upd, "title") != "renamed" || get(mustCall(t, 200, "GET", base+"/session/"+sid, ""), "title") != "renamed" {
		t.Fatalf("update %v", upd)
	}
	ev.wait(func(e map[string]any) bool {
		return e["type"] == "session.updated" && get(e, "properties", "info", "title") == "renamed"
	}, 5*time.Second)

	if del := mustCall(t, 200, "DELETE", base+"/session/"+sid, ""); del != true {
		t.Fatalf("delete %v", del)
	}
	mustCall(t, 404, "GET", base+"/session/"+sid, "")
	mustCall(t, 404, "GET", base+"/session/"+str(child["id"]), "")
	ev.wait(isType("session.deleted", str(child["id"])), 5*time.Second)
	ev.wait(isType("session.deleted", sid), 5*time.Second)
	if n := len(arr(mustCall(t, 200, "GET", base+"/session", ""))); n != 1 {
		t.Fatalf("%d sessions left", n)
	}

	evs := ev.events()
	checkEvents(t, evs)
	if evs[0]["type"] != "server.connected" {
		t.Fatalf("first event %v", evs[0])
	}
	created := 0
	for _, e := range evs {
		if e["type"] == "session.created" {
			created++
		}
	}
	if created != 3 {
		t.Fatalf("%d session.created", created)
	}
}

func TestDirectoryScopedEvents(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{})
	here := subscribe(t, base+"/event?directory=/tmp/a")
	global := subscribe(t, base+"/global/event")

	a := createSessionIn(t, base, "/tmp/a", "")
	b := createSessionIn(t, base, "/tmp/b", "")
	global.wait(func(e map[string]any) bool { return get(e, "payload", "properties", "sessionID") == b["id"] }, 5*time.Second)
	here.wait(isType("session.created", str(a["id"])), 5*time.Second)
	for _, e := range here.events() {
		if get(e, "properties", "sessionID") == b["id"] {
			t.Fatalf("directory /tmp/a got an event of /tmp/b: %v", e)
		}
	}
	// A server that has not seen the session before (as after a restart)
	// still files its events under its directory.
	titled := createSessionIn(t, base, "/tmp/a", `{"title":"titled"}`)
	_, base2 := newServer(t, p, Options{})
	here2 := subscribe(t, base2+"/event?directory=/tmp/a")
	mustCall(t, 200, "POST", base2+"/session/"+str(titled["id"])+"/message", promptBody("hello"))
	here2.wait(isType("session.idle", str(titled["id"])), 5*time.Second)
	for _, typ := range []string{"message.updated", "message.part.updated", "session.status"} {
		here2.wait(isType(typ, str(titled["id"])), time.Second)
	}

	for i, e := range global.events() {
		if _, ok := e["directory"].(string); !ok || len(e) != 2 {
			t.Fatalf("global frame %d is not {directory, payload}: %v", i, e)
		}
		mustMatch(t, refName[str(get(e, "payload", "type"))], e["payload"])
		if sid := get(e, "payload", "properties", "sessionID"); sid == b["id"] && e["directory"] != "/tmp/b" {
			t.Fatalf("global frame directory %v", e)
		}
	}
}

func TestBadInputKeepsServing(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{MaxBodyBytes: 1 << 10})
	sid := str(createSession(t, base, "")["id"])
	unknown := "ses_00000000000000unknownid00"

	for _, c := range []struct{ method, path, body string }{
		{"GET", "/session/" + unknown, ""},
		{"PATCH", "/session/" + unknown, `{"title":"x"}`},
		{"DELETE", "/session/" + unknown, ""},
		{"GET", "/session/" + unknown + "/children", ""},
		{"GET", "/session/" + unknown + "/message", ""},
		{"POST", "/session/" + unknown + "/message", promptBody("hi")},
		{"POST", "/session/" + unknown + "/prompt_async", promptBody("hi")},
		{"POST", "/session/" + unknown + "/abort", ""},
		{"GET", "/session/not-a-session-id", ""},
	} {
		st, v := call(t, c.method, base+c.path, c.body)
		if st != 404 {
			t.Fatalf("%s %s: %d %v", c.method, c.path, st, v)
		}
		mustMatch(t, "NotFoundError", v)
		id := strings.Split(strings.TrimPrefix(c.path, "/session/"), "/")[0]
		if want := "Session not found: " + id; get(v, "data", "message") != want {
			t.Fatalf("%s %s: %v, want message %q", c.method, c.path, v, want)
		}
	}
	// A parentID that names no session.
	st, v := call(t, "POST", base+"/session", fmt.Sprintf(`{"parentID":%q}`, unknown))
	if st != 404 || get(v, "data", "message") != "Session not found: "+unknown {
		t.Fatalf("unknown parent: %d %v", st, v)
	}

	for _, c := range []struct{ method, path, body, want string }{
		{"POST", "/session", `{`, "malformed JSON"},
		{"POST", "/session", `[1,2]`, "expected"},
		{"POST", "/session", `{"title": 5}`, "title"},
		{"POST", "/session", `{"parentID": "nope"}`, "parentID"},
		{"POST", "/session", `{"agent": "nobody"}`, "unknown agent"},
		{"PATCH", "/session/" + sid, `{"title": {}}`, "title"},
		{"POST", "/session/" + sid + "/message", ``, "empty"},
		{"POST", "/session/" + sid + "/message", `{"parts": "hi"}`, "parts"},
		{"POST", "/session/" + sid + "/message", `{}`, "parts"},
		{"POST", "/session/" + sid + "/message", `{"parts": []}`, "no text"},
		{"POST", "/session/" + sid + "/message", `{"parts": [{"type":"file","mime":"text/plain","url":"file:///x"}]}`, "file parts"},
		{"POST", "/session/" + sid + "/message", `{"parts": [{"type":"text","text":"x"}], "agent": "nobody"}`, "unknown agent"},
		{"POST", "/session/" + sid + "/message", `{"parts": [{"type":"text","text":"x"}], "messageID": "bad"}`, "messageID"},
		{"POST", "/session/" + sid + "/prompt_async", `{"parts": [{"type":"text"`, "malformed JSON"},
		{"GET", "/session?limit=abc", ``, "limit"},
		{"GET", "/session?roots=maybe", ``, "roots"},
		{"GET", "/session/" + sid + "/message?limit=-1", ``, "limit"},
	} {
		st, v := call(t, c.method, base+c.path, c.body)
		if st != 400 {
			t.Fatalf("%s %s %s: %d %v", c.method, c.path, c.body, st, v)
		}
		mustMatch(t, "BadRequestError", v)
		if msg := str(get(v, "data", "message")); !strings.Contains(msg, c.want) {
			t.Fatalf("%s %s %s: message %q, want it to mention %q", c.method, c.path, c.body, msg, c.want)
		}
	}

	big := `{"parts":[{"type":"text","text":"` + strings.Repeat("x", 2<<10) + `"}]}`
	st, v = call(t, "POST", base+"/session/"+sid+"/message", big)
	if st != 413 {
		t.Fatalf("big body: %d %v", st, v)
	}
	mustMatch(t, "BadRequestError", v)

	if st, v := call(t, "PUT", base+"/session/"+sid, "{}"); st != 405 {
		t.Fatalf("PUT: %d %v", st, v)
	}
	if st, v := call(t, "GET", base+"/nowhere", ""); st != 404 || get(v, "name") != "NotFoundError" {
		t.Fatalf("unknown route: %d %v", st, v)
	}

	// Still serving: a prompt runs.
	ans := mustCall(t, 200, "POST", base+"/session/"+sid+"/message", promptBody("still there?"))
	mustMatchResponse(t, "post", "/session/{sessionID}/message", "200", ans)
	mustCall(t, 200, "GET", base+"/global/health", "")
}

func TestNoReplyAndQueuedPrompts(t *testing.T) {
	noLeaks(t)
	p := newPool(t, `
agents:
  echo:
    model: {type: scripted, delay: 5ms, turns: [{text: "answer"}]}
`)
	_, base := newServer(t, p, Options{})
	ev := subscribe(t, base+"/event")
	sid := str(createSession(t, base, "")["id"])

	nr := mustCall(t, 200, "POST", base+"/session/"+sid+"/message", `{"noReply":true,"parts":[{"type":"text","text":"remember this"}]}`)
	if get(nr, "info", "role") != "user" || get(arr(get(nr, "parts"))[0], "text") != "remember this" {
		t.Fatalf("noReply answer %v", nr)
	}
	mustMatch(t, "UserMessage", get(nr, "info"))

	// Two prompts at once: the second waits for the first.
	mustCall(t, 204, "POST", base+"/session/"+sid+"/prompt_async", promptBody("first"))
	mustCall(t, 204, "POST", base+"/session/"+sid+"/prompt_async", promptBody("second"))
	// Both ran once the session went idle a second time (the noReply
	// message ran nothing).
	isStatus := func(e map[string]any) bool {
		return get(e, "properties", "sessionID") == sid && (e["type"] == "session.status" || e["type"] == "session.idle")
	}
	ev.waitN(isType("session.idle", sid), 2, 10*time.Second)
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+sid+"/message", ""))
	if len(msgs) != 5 {
		t.Fatalf("prompts did not both run: %v", msgs)
	}
	if st := obj(mustCall(t, 200, "GET", base+"/session/status", "")); len(st) != 0 {
		t.Fatalf("status after both ran: %v", st)
	}
	mustMatchResponse(t, "get", "/session/{sessionID}/message", "200", msgs)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, str(get(m, "info", "role")))
	}
	if strings.Join(roles, ",") != "user,user,assistant,user,assistant" {
		t.Fatalf("roles %v", roles)
	}
	if get(arr(get(msgs[3], "parts"))[0], "text") != "second" || get(msgs[4], "info", "parentID") != get(msgs[3], "info", "id") {
		t.Fatalf("messages %v", msgs)
	}
	// The session went busy and idle twice, never overlapping: the second
	// session.idle is the last of the six.
	var seq []string
	for _, e := range ev.events() {
		if isStatus(e) {
			seq = append(seq, str(e["type"])+":"+str(get(e, "properties", "status", "type")))
		}
	}
	if got := strings.Join(seq, " "); got != "session.status:busy session.status:idle session.idle: session.status:busy session.status:idle session.idle:" {
		t.Fatalf("status sequence %s", got)
	}
	// The session took its first prompt as its title.
	if title := get(mustCall(t, 200, "GET", base+"/session/"+sid, ""), "title"); title != "remember this" {
		t.Fatalf("title %v", title)
	}
}

func TestDoc(t *testing.T) {
	noLeaks(t)
	p := newPool(t, nestedManifest(t))
	s, base := newServer(t, p, Options{})
	v := mustCall(t, 200, "GET", base+"/doc", "")
	d := obj(v)
	if d["openapi"] != "3.1.0" || get(d, "info", "title") == nil || get(d, "info", "version") != "test" {
		t.Fatalf("doc head %v %v", d["openapi"], d["info"])
	}
	// Every route is documented, with its operation id and responses.
	for _, rt := range s.routes {
		op := obj(get(d, "paths", rt.path, strings.ToLower(rt.method)))
		if op == nil || op["operationId"] != rt.op || len(obj(op["responses"])) == 0 {
			t.Fatalf("%s %s: %v", rt.method, rt.path, op)
		}
		dirParam := false
		for _, prm := range arr(op["parameters"]) {
			if get(prm, "name") == "directory" && get(prm, "in") == "query" {
				dirParam = true
			}
			if get(prm, "in") == "path" && get(prm, "required") != true {
				t.Fatalf("%s %s: path parameter not required", rt.method, rt.path)
			}
		}
		if !dirParam {
			t.Fatalf("%s %s: no directory parameter", rt.method, rt.path)
		}
	}
	paths := map[string]bool{}
	for _, rt := range s.routes {
		paths[rt.path] = true
	}
	if n := len(obj(get(d, "paths"))); n != len(paths) {
		t.Fatalf("%d paths documented, %d served", n, len(paths))
	}
	// Every $ref resolves.
	var self schemaDoc
	b, _ := json.Marshal(v)
	if err := json.Unmarshal(b, &self); err != nil {
		t.Fatal(err)
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok {
				if _, ok := self.Components.Schemas[strings.TrimPrefix(r, "#/components/schemas/")]; !ok || !strings.HasPrefix(r, "#/components/schemas/") {
					t.Fatalf("unresolved $ref %s", r)
				}
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)

	// Our components agree with opencode's: every field opencode requires
	// we require (and send), and we send no field opencode does not know.
	ref := reference(t)
	compared := 0
	for name, ours := range self.Components.Schemas {
		theirs := obj(ref.Components.Schemas[name])
		if theirs == nil || theirs["properties"] == nil || obj(ours)["properties"] == nil {
			continue
		}
		compared++
		mine := obj(obj(ours)["properties"])
		req := map[string]bool{}
		for _, r := range asStrings(obj(ours)["required"]) {
			req[r] = true
		}
		for _, r := range asStrings(theirs["required"]) {
			if !req[r] {
				t.Errorf("%s: opencode requires %s, /doc does not", name, r)
			}
		}
		for k := range mine {
			if _, ok := obj(theirs["properties"])[k]; !ok {
				t.Errorf("%s: property %s is not in opencode's schema", name, k)
			}
		}
	}
	if compared < 20 {
		t.Fatalf("only %d components compared", compared)
	}

	// Real answers match /doc itself.
	sess := createSession(t, base, "")
	if errs := checkSchema(&self, "Session", sess); len(errs) > 0 {
		t.Fatal(errs)
	}
	ans := mustCall(t, 200, "POST", base+"/session/"+str(sess["id"])+"/message", promptBody("doc check"))
	var errs []string
	validate(&self, get(d, "paths", "/session/{sessionID}/message", "post", "responses", "200", "content", "application/json", "schema"), ans, "prompt", &errs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
}

// acceptedBefore makes sure the server accepted every connection dialled
// before: it answers a request on a new connection, and a listener hands
// out connections in the order their handshakes completed.
func acceptedBefore(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /global/health HTTP/1.1\r\nHost: "+addr+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("health: %d", res.StatusCode)
	}
}

func TestServeShutsDown(t *testing.T) {
	noLeaks(t)
	p := newPool(t, slowYAML)
	s := New(p, Options{Directory: "/work/project"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	ev := subscribe(t, base+"/event")
	root := str(createSession(t, base, "")["id"])
	mustCall(t, 204, "POST", base+"/session/"+root+"/prompt_async", promptBody("go"))
	ev.wait(isType("session.status", root), 5*time.Second)
	// A connection that never sends a request does not hold shutdown up.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	acceptedBefore(t, ln.Addr().String())
	start := time.Now()
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("shutdown took %s", d)
	}
	// The event stream ended; the run was cancelled.
	ev.close()
	rec, err := p.Store().GetSession(context.Background(), root)
	if err != nil || rec.Status != session.StatusAborted {
		t.Fatalf("root %v %v", rec.Status, err)
	}
}
