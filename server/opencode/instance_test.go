package opencode

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// fullSpec loads the whole OpenCode 1.18.33 OpenAPI document of docs/spec.
func fullSpec(t *testing.T) *schemaDoc {
	t.Helper()
	b, err := os.ReadFile("../../docs/spec/opencode-1.18.33-openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var d schemaDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestInstanceRoutesMatchOpenCode calls every route the OpenCode TUI reads
// at start and while a session is open (found by attaching opencode
// 1.18.33 to the server and logging its requests) and checks each answer
// against the response schema OpenCode's own server declares for that
// route. Before these routes existed the TUI exited with "No such route:
// GET /provider".
func TestInstanceRoutesMatchOpenCode(t *testing.T) {
	noLeaks(t)
	spec := fullSpec(t)
	p := newPool(t, nestedManifest(t))
	_, base := newServer(t, p, Options{})
	sid := str(get(mustCall(t, 200, "POST", base+"/session", `{}`), "id"))
	for _, path := range []string{
		"/provider", "/provider/auth", "/command", "/skill", "/mcp", "/lsp", "/formatter", "/vcs",
		"/permission", "/question", "/project/{projectID}/directories",
		"/experimental/capabilities", "/experimental/console", "/experimental/workspace",
		"/experimental/workspace/status", "/experimental/resource",
		"/api/location", "/api/agent", "/api/command", "/api/integration", "/api/model",
		"/api/provider", "/api/reference", "/api/skill",
		"/session/{sessionID}/diff",
	} {
		url := strings.NewReplacer("{projectID}", "p1", "{sessionID}", sid).Replace(path)
		v := mustCall(t, 200, "GET", base+url, "")
		var op struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema any `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		}
		if err := json.Unmarshal(spec.Paths[path]["get"], &op); err != nil {
			t.Fatalf("%s: no GET in the OpenCode spec: %v", path, err)
		}
		schema := op.Responses["200"].Content["application/json"].Schema
		if schema == nil {
			t.Fatalf("%s: the OpenCode spec has no JSON 200 schema", path)
		}
		var errs []string
		validate(spec, schema, v, path, &errs)
		if len(errs) > 0 {
			b, _ := json.Marshal(v)
			t.Errorf("GET %s does not match OpenCode's schema:\n  %s\nvalue: %.1000s", path, strings.Join(errs, "\n  "), b)
		}
	}
	// The providers of GET /provider are those of GET /config/providers,
	// every one connected.
	prov := obj(mustCall(t, 200, "GET", base+"/provider", ""))
	all := arr(prov["all"])
	if len(all) == 0 || len(arr(prov["connected"])) != len(all) {
		t.Fatalf("GET /provider: %v", prov)
	}
}
