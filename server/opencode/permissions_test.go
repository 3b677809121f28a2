package opencode

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/approval"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
)

// approvalYAML: the lead delegates to the writer, whose Write asks (the
// default rule of Write); the writer then answers with the tool results.
const approvalYAML = `
default_agent: lead
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: writer, description: Write the note, prompt: Write hello.md.}}]
        - text: "lead done"
    tools: [subagent]
  writer:
    tools: [file_access]
    model:
      type: test
      call_tools: [Write]
      tool_args:
        Write: {file_path: hello.md, content: "hello\n"}
`

// approvalServer is a server whose pool asks through a broker it attaches
// to, over a workspace of its own.
func approvalServer(t *testing.T, yaml ...string) (base, ws string, b *approval.Broker) {
	t.Helper()
	ws = t.TempDir()
	src := approvalYAML
	if len(yaml) > 0 {
		src = yaml[0]
	}
	m, err := config.Parse("approval.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	reg := hook.New(hook.Options{})
	b, err = approval.New(approval.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg.UseBroker(b)
	p, err := pool.New(m, pool.Options{Workspace: ws, Hooks: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	_, base = newServer(t, p, Options{Directory: ws, Approvals: b})
	return base, ws, b
}

// startWrite prompts a new root and returns its id, the stream and the
// permission.asked event of the writer's Write.
func startWrite(t *testing.T, base string) (root string, sse *sseClient, asked map[string]any) {
	t.Helper()
	sse = subscribe(t, base+"/event")
	root = str(createSession(t, base, "")["id"])
	mustCall(t, 204, "POST", base+"/session/"+root+"/prompt_async", promptBody("write it"))
	asked = sse.wait(isType("permission.asked", ""), 10*time.Second)
	return root, sse, asked
}

// childOf is the id of root's one child session.
func childOf(t *testing.T, base, root string) string {
	t.Helper()
	kids := arr(mustCall(t, 200, "GET", base+"/session/"+root+"/children", ""))
	if len(kids) != 1 {
		t.Fatalf("children %v", kids)
	}
	return str(get(kids[0], "id"))
}

// A child's Write asks on the child's session: permission.asked (after a
// session.updated that lists the child), GET /permission, the reply, then
// permission.replied; the write happens once allowed. The wire shapes
// match opencode's schemas and the golden file.
func TestPermissionAllowOnce(t *testing.T) {
	noLeaks(t)
	base, ws, _ := approvalServer(t)
	root, sse, asked := startWrite(t, base)
	child := childOf(t, base, root)
	props := obj(asked["properties"])
	if str(props["sessionID"]) != child {
		t.Fatalf("asked on %v, want the child %s (root %s)", props["sessionID"], child, root)
	}
	// The TUI lists the child (session.updated) before it asks.
	evs := sse.events()
	var updated, askedAt int = -1, -1
	for i, e := range evs {
		if e["type"] == "session.updated" && get(e, "properties", "sessionID") == child && updated < 0 {
			updated = i
		}
		if e["type"] == "permission.asked" {
			askedAt = i
		}
	}
	if updated < 0 || updated > askedAt {
		t.Fatalf("session.updated of the child at %d, permission.asked at %d", updated, askedAt)
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); err == nil {
		t.Fatal("the file was written before the answer")
	}
	list := mustCall(t, 200, "GET", base+"/permission", "")
	mustMatchResponse(t, "get", "/permission", "200", list)
	if l := arr(list); len(l) != 1 || !jsonEqual(l[0], props) {
		t.Fatalf("GET /permission %v, want [%v]", list, props)
	}
	if l := arr(mustCall(t, 200, "GET", base+"/permission?directory=/elsewhere", "")); len(l) != 0 {
		t.Fatalf("another directory's list %v", l)
	}
	goldenJSON(t, "permission_asked.golden", ws, normalizePermission(props, child))

	rid := str(props["id"])
	reply := base + "/permission/" + rid + "/reply"
	for _, bad := range []string{`{}`, `{"reply":"yes"}`, `{"reply":"once","extra":1}`, `[1]`} {
		v := mustCall(t, 400, "POST", reply, bad)
		mustMatchResponse(t, "post", "/permission/{requestID}/reply", "400", v)
	}
	v := mustCall(t, 404, "POST", base+"/permission/per_unknown/reply", `{"reply":"once"}`)
	mustMatchResponse(t, "post", "/permission/{requestID}/reply", "404", v)

	if v := mustCall(t, 200, "POST", reply, `{"reply":"once"}`); v != true {
		t.Fatalf("reply answered %v", v)
	}
	v = mustCall(t, 404, "POST", reply, `{"reply":"reject"}`)
	mustMatchResponse(t, "post", "/permission/{requestID}/reply", "404", v)
	if !strings.Contains(str(obj(v)["message"]), "no longer pending") {
		t.Fatalf("second reply: %v", v)
	}
	replied := sse.wait(isType("permission.replied", child), 10*time.Second)
	if got := obj(replied["properties"]); got["requestID"] != rid || got["reply"] != "once" {
		t.Fatalf("permission.replied %v", got)
	}
	sse.wait(isType("session.idle", root), 10*time.Second)
	if b, err := os.ReadFile(filepath.Join(ws, "hello.md")); err != nil || string(b) != "hello\n" {
		t.Fatalf("the file: %q, %v", b, err)
	}
	if l := arr(mustCall(t, 200, "GET", base+"/permission", "")); len(l) != 0 {
		t.Fatalf("still pending %v", l)
	}
	checkEvents(t, sse.events())
}

// The deprecated route rejects; the child's tool part ends in error with
// the rejection, and the run goes on to the lead's answer.
func TestPermissionRespondRejects(t *testing.T) {
	noLeaks(t)
	base, ws, _ := approvalServer(t)
	root, sse, asked := startWrite(t, base)
	child := childOf(t, base, root)
	rid := str(get(asked, "properties", "id"))
	route := "/session/{sessionID}/permissions/{permissionID}"
	v := mustCall(t, 404, "POST", base+"/session/ses_nope/permissions/"+rid, `{"response":"reject"}`)
	mustMatchResponse(t, "post", route, "404", v)
	v = mustCall(t, 404, "POST", base+"/session/"+root+"/permissions/"+rid, `{"response":"reject"}`)
	mustMatchResponse(t, "post", route, "404", v)
	v = mustCall(t, 400, "POST", base+"/session/"+child+"/permissions/"+rid, `{"reply":"reject"}`)
	mustMatchResponse(t, "post", route, "400", v)
	if v := mustCall(t, 200, "POST", base+"/session/"+child+"/permissions/"+rid, `{"response":"reject"}`); v != true {
		t.Fatalf("respond answered %v", v)
	}
	replied := sse.wait(isType("permission.replied", child), 10*time.Second)
	if get(replied, "properties", "reply") != "reject" {
		t.Fatalf("permission.replied %v", replied)
	}
	sse.wait(isType("session.idle", root), 10*time.Second)
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); err == nil {
		t.Fatal("the rejected Write happened")
	}
	var toolErr string
	for _, m := range arr(mustCall(t, 200, "GET", base+"/session/"+child+"/message", "")) {
		for _, p := range arr(get(m, "parts")) {
			if get(p, "type") == "tool" && get(p, "tool") == "write" {
				toolErr = str(get(p, "state", "error"))
			}
		}
	}
	if !strings.Contains(toolErr, "approval rejected: rejected by the user in opencode") {
		t.Fatalf("the child's write part: %q", toolErr)
	}
	msgs := arr(mustCall(t, 200, "GET", base+"/session/"+root+"/message", ""))
	last := msgs[len(msgs)-1]
	if b, _ := json.Marshal(last); !strings.Contains(string(b), "lead done") {
		t.Fatalf("the lead did not go on: %s", b)
	}
	checkEvents(t, sse.events())
}

// Aborting the run withdraws its pending request: permission.replied
// (reject) and GET /permission is empty again.
func TestPermissionAbortWithdraws(t *testing.T) {
	noLeaks(t)
	base, _, b := approvalServer(t)
	root, sse, asked := startWrite(t, base)
	rid := str(get(asked, "properties", "id"))
	mustCall(t, 200, "POST", base+"/session/"+root+"/abort", "")
	replied := sse.wait(isType("permission.replied", ""), 10*time.Second)
	if get(replied, "properties", "requestID") != rid || get(replied, "properties", "reply") != "reject" {
		t.Fatalf("permission.replied %v", replied)
	}
	if l := arr(mustCall(t, 200, "GET", base+"/permission", "")); len(l) != 0 {
		t.Fatalf("still pending %v", l)
	}
	if len(b.Pending()) != 0 {
		t.Fatal("the broker still holds the request")
	}
	mustCall(t, 404, "POST", base+"/permission/"+rid+"/reply", `{"reply":"once"}`)
}

// A grandchild's request is published on its ancestor that is the root's
// child (the sessions whose prompts the TUI shows in the root's view);
// metadata.sessionID names the grandchild, and replying on either
// session's deprecated route works.
func TestPermissionGrandchildShownOnRootsChild(t *testing.T) {
	noLeaks(t)
	deep := strings.Replace(approvalYAML, "agent_or_team: writer", "agent_or_team: mid", 1) + `
  mid:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: task, args: {agent_or_team: writer, description: Write, prompt: Write hello.md.}}]
        - text: "mid done"
    tools: [subagent]
`
	base, ws, b := approvalServer(t, deep)
	root, sse, asked := startWrite(t, base)
	child := childOf(t, base, root)
	grandchild := childOf(t, base, child)
	props := obj(asked["properties"])
	if props["sessionID"] != child || get(props, "metadata", "sessionID") != grandchild {
		t.Fatalf("asked %v; child %s, grandchild %s", props, child, grandchild)
	}
	if p := b.Pending(); len(p) != 1 || p[0].SessionID != grandchild {
		t.Fatalf("the broker's request %+v", p)
	}
	if l := arr(mustCall(t, 200, "GET", base+"/permission", "")); len(l) != 1 || !jsonEqual(l[0], props) {
		t.Fatalf("GET /permission %v", l)
	}
	rid := str(props["id"])
	mustCall(t, 200, "POST", base+"/session/"+child+"/permissions/"+rid, `{"response":"once"}`)
	replied := sse.wait(isType("permission.replied", child), 10*time.Second)
	if get(replied, "properties", "requestID") != rid {
		t.Fatalf("permission.replied %v", replied)
	}
	sse.wait(isType("session.idle", root), 10*time.Second)
	if _, err := os.Stat(filepath.Join(ws, "hello.md")); err != nil {
		t.Fatal(err)
	}
	checkEvents(t, sse.events())
}

// Without a broker nothing is pending and replies find nothing.
func TestPermissionWithoutBroker(t *testing.T) {
	noLeaks(t)
	_, base := newServer(t, newPool(t, slowYAML), Options{})
	if l := mustCall(t, 200, "GET", base+"/permission", ""); len(arr(l)) != 0 || l == nil {
		t.Fatalf("GET /permission %v", l)
	}
	v := mustCall(t, 404, "POST", base+"/permission/per_x/reply", `{"reply":"once"}`)
	mustMatchResponse(t, "post", "/permission/{requestID}/reply", "404", v)
}

// normalizePermission replaces the ids of a permission request that
// change from run to run.
func normalizePermission(p map[string]any, child string) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		out[k] = v
	}
	out["id"] = "per_ID"
	if out["sessionID"] == child {
		out["sessionID"] = "ses_CHILD"
	}
	if tool := obj(p["tool"]); tool != nil {
		out["tool"] = map[string]any{"messageID": "msg_ID", "callID": "cal_ID", "messageID ok": strings.HasPrefix(str(tool["messageID"]), "msg_"), "callID ok": str(tool["callID"]) != ""}
	}
	return out
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// goldenJSON compares v (indented, the workspace path replaced) with
// testdata/name; -update rewrites it.
func goldenJSON(t *testing.T, name, ws string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		got = strings.ReplaceAll(got, real, "$WORKSPACE")
	}
	got = strings.ReplaceAll(got, ws, "$WORKSPACE") + "\n"
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, got)
	}
}

// An answer is labelled with the client that sent it when it names one
// the server knows (the web view sends X-Agentpool-Client: web), else as
// OpenCode's; a client cannot pass for one of the broker's own labels.
func TestPermissionAnswerLabelledByClient(t *testing.T) {
	noLeaks(t)
	for _, c := range []struct{ header, want string }{{"web", "web"}, {"", "opencode"}, {approval.ByRule, "opencode"}} {
		t.Run("client="+c.header, func(t *testing.T) {
			base, _, b := approvalServer(t)
			replied := make(chan approval.Answer, 1)
			defer b.Attach("probe", func(n approval.Notice) {
				if n.Kind == approval.Replied {
					replied <- n.Answer
				}
			})()
			root, sse, asked := startWrite(t, base)
			req, err := http.NewRequest("POST", base+"/permission/"+str(obj(asked["properties"])["id"])+"/reply", strings.NewReader(`{"reply":"once"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if c.header != "" {
				req.Header.Set(ClientHeader, c.header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("reply: %s", res.Status)
			}
			if a := <-replied; a.By != c.want {
				t.Errorf("answered by %q, want %q", a.By, c.want)
			}
			sse.wait(isType("session.idle", root), 10*time.Second)
		})
	}
}
