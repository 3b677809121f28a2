package pool_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/search"
	"github.com/agentpool/agentpool/tool/webfetch"
)

// An AgentPool manifest's search toolset gives its agent web_search
// through the provider it names, with the key from the variable its
// api_key names. The provider is a local fake speaking Tavily's JSON; the
// Registry's SearchMaker allows its loopback address explicitly, as
// batteries.Search never does.
func TestSearchToolsetUsesTheNamedProvider(t *testing.T) {
	var (
		mu   sync.Mutex
		auth string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"results":[{"title":"Go 1.26 Release Notes","url":"https://go.dev/doc/go1.26","content":"Changes in Go 1.26.","score":0.9}]}`)
	}))
	defer srv.Close()
	t.Setenv("MY_TAVILY", "tvly-test")
	allow, err := webfetch.ParseAllowList([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	var asked config.SearchSpec
	reg := batteries.Registry().SetSearch(func(s config.SearchSpec) ([]tool.Tool, error) {
		asked = s
		return search.New(search.Options{Allow: allow,
			Web: &search.Provider{Name: s.Web.Name, APIKeyEnv: s.Web.APIKeyEnv, BaseURL: srv.URL}})
	})
	m, err := config.Parse("agentpool.yml", []byte(`
agents:
  researcher:
    model:
      type: test
      call_tools: [web_search]
      tool_args:
        web_search: {query: go 1.26 release notes}
      custom_output_text: Found it.
    toolsets:
      - type: search
        provider: tavily
        api_key: ${MY_TAVILY}
    tool_approval: {web_search: allow}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Workspace: t.TempDir(), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if asked.Web == nil || asked.Web.Name != "tavily" || asked.Web.APIKeyEnv != "MY_TAVILY" || asked.News != nil {
		t.Fatalf("SearchMaker got %+v", asked)
	}
	sink, events := eventtest.Collect()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "researcher", Prompt: "find the notes"}, sink)
	if err != nil {
		t.Fatal(err)
	}
	var done *event.ToolCallComplete
	for _, e := range events() {
		_, inner := event.Unwrap(res.SessionID, e)
		if c, ok := inner.(event.ToolCallComplete); ok && c.ToolName == "web_search" {
			done = &c
		}
	}
	if done == nil || done.IsError || !strings.Contains(done.ToolResult, "1. Go 1.26 Release Notes\n   https://go.dev/doc/go1.26") {
		t.Fatalf("web_search call: %+v", done)
	}
	mu.Lock()
	defer mu.Unlock()
	if auth != "Bearer tvly-test" {
		t.Fatalf("Authorization %q", auth)
	}
}
