package config

import (
	"reflect"
	"strings"
	"testing"
)

// AgentPool's search toolset in both its forms: the configuration's
// web_search/news_search and the documented provider/api_key keys.
func TestSearchToolset(t *testing.T) {
	m := mustParse(t, `
agents:
  a:
    model: test
    toolsets:
      - type: search
        web_search: tavily
        news_search: {type: brave, api_key: "${NEWS_KEY}"}
  b:
    model: test
    toolsets:
      - type: search
        provider: Brave
        api_key: literal-key
        news_provider: tavily
        news_api_key: "${TAV:-fallback}"
`)
	a := m.Agents["a"].Toolsets[0]
	if a.Type != ToolsetSearch || !reflect.DeepEqual(*a.Search, SearchSpec{
		Web:  &SearchProvider{Name: "tavily", Line: 7},
		News: &SearchProvider{Name: "brave", APIKeyEnv: "NEWS_KEY", Line: 8},
	}) {
		t.Fatalf("a: %+v web %+v news %+v", a, a.Search.Web, a.Search.News)
	}
	b := m.Agents["b"].Toolsets[0].Search
	if !reflect.DeepEqual(*b, SearchSpec{
		Web:  &SearchProvider{Name: "brave", APIKey: "literal-key", Line: 13},
		News: &SearchProvider{Name: "tavily", APIKeyEnv: "TAV", APIKey: "fallback", Line: 15},
	}) {
		t.Fatalf("b: web %+v news %+v", b.Web, b.News)
	}
	if len(m.Warnings) != 0 {
		t.Fatalf("warnings: %+v", m.Warnings)
	}

	// A bare search toolset gives no tools, as in AgentPool: warned.
	m = mustParse(t, "agents:\n  a:\n    model: test\n    toolsets:\n      - type: search\n    tools: []\n  b:\n    model: test\n    tools: [search]\n")
	if len(m.Warnings) != 2 || m.Warnings[0].Line != 5 || !strings.Contains(m.Warnings[0].Msg, "names no provider") || m.Warnings[1].Line != 9 {
		t.Fatalf("warnings: %+v", m.Warnings)
	}

	diffLines(t, parseErr(t, `agents:
  a:
    model: test
    toolsets:
      - type: search
        provider: serper
        news_search: {api_key: x}
  b:
    model: test
    toolsets:
      - type: search
        web_search: tavly
        provider: tavily
        news_api_key: k
`), []string{
		`agentpool.yaml:6: agents.a.toolsets[0].provider: search provider "serper" is not supported: agentpool speaks tavily and brave (or reach another search service through an MCP server)`,
		`agentpool.yaml:7: agents.a.toolsets[0].news_search: missing required field "type" (the provider: tavily, brave)`,
		`agentpool.yaml:13: agents.b.toolsets[0].provider: set either web_search or provider, not both`,
		`agentpool.yaml:14: agents.b.toolsets[0].news_api_key: news_api_key needs news_provider (tavily, brave)`,
	})
}
