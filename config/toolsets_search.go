// AgentPool's search toolset: web and news search through a provider.

package config

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ToolsetSearch is AgentPool's search toolset: web_search and news_search
// through the providers its entry names (package tool/search).
const ToolsetSearch = "search"

// SearchProviders are the search providers agentpool speaks.
var SearchProviders = []string{"tavily", "brave"}

// otherSearchProviders are AgentPool's (searchly's) other providers.
var otherSearchProviders = []string{"searxng", "serper", "you", "newsapi", "exa", "kagi", "duckduckgo", "ddg", "google", "bing", "serpapi", "jina", "linkup", "perplexity", "firecrawl"}

// SearchProvider is one provider of the search toolset.
type SearchProvider struct {
	Name string // one of SearchProviders
	// APIKeyEnv is the variable named by api_key: ${VAR}, read at each
	// call; APIKey the key written in the manifest (with APIKeyEnv: the
	// ${VAR:-default}). Both empty: the provider's usual variable
	// (TAVILY_API_KEY, BRAVE_API_KEY).
	APIKey, APIKeyEnv string
	Line              int
}

// SearchSpec is what a search toolset entry configures; a nil provider
// leaves its tool out.
type SearchSpec struct {
	Web, News *SearchProvider
}

// searchKeys are the keys of a search entry: AgentPool's configuration
// (web_search, news_search: a provider name or {type, api_key}) and its
// documented short form (provider, api_key, news_provider, news_api_key).
var searchKeys = []string{"web_search", "news_search", "provider", "api_key", "news_provider", "news_api_key"}

// searchSpec reads the provider keys of a search entry at line.
func (p *parser) searchSpec(f map[string]entry, ip string, line int) *SearchSpec {
	var s SearchSpec
	s.Web = p.searchSide(f, ip, "web_search", "provider", "api_key")
	s.News = p.searchSide(f, ip, "news_search", "news_provider", "news_api_key")
	if s.Web == nil && s.News == nil && !p.hasSearchKeys(f) {
		p.warn(line, ip, "the search toolset names no provider (web_search or provider: %s): it gives no tools, as in AgentPool", strings.Join(SearchProviders, ", "))
	}
	return &s
}

func (p *parser) hasSearchKeys(f map[string]entry) bool {
	for _, k := range searchKeys {
		if _, ok := f[k]; ok {
			return true
		}
	}
	return false
}

// searchSide reads one side (web or news): the full key, or the short
// provider and api_key keys, not both.
func (p *parser) searchSide(f map[string]entry, ip, full, short, keyKey string) *SearchProvider {
	fe, hasFull := f[full]
	se, hasShort := f[short]
	ke, hasKey := f[keyKey]
	if hasFull && (hasShort || hasKey) {
		at := se
		if !hasShort {
			at = ke
		}
		p.add(at.line(), join(ip, at.key), "set either %s or %s, not both", full, at.key)
		return nil
	}
	if hasFull {
		return p.searchProvider(fe.val, join(ip, full))
	}
	if !hasShort {
		if hasKey {
			p.add(ke.line(), join(ip, keyKey), "%s needs %s (%s)", keyKey, short, strings.Join(SearchProviders, ", "))
		}
		return nil
	}
	sp := p.providerName(se.val, join(ip, short))
	if sp != nil && hasKey {
		p.apiKey(sp, ke.val, join(ip, keyKey))
	}
	return sp
}

// searchProvider reads AgentPool's web_search/news_search value: a
// provider name or a mapping {type: NAME, api_key: KEY}.
func (p *parser) searchProvider(n *yaml.Node, path string) *SearchProvider {
	d := deref(n)
	if isNull(d) {
		return nil
	}
	if d.Kind == yaml.ScalarNode {
		return p.providerName(n, path)
	}
	f, ok := p.object(n, path, []string{"type", "api_key"})
	if !ok {
		return nil
	}
	te, ok := f["type"]
	if !ok {
		p.add(n.Line, path, "missing required field \"type\" (the provider: %s)", strings.Join(SearchProviders, ", "))
		return nil
	}
	sp := p.providerName(te.val, join(path, "type"))
	if sp != nil {
		if ke, ok := f["api_key"]; ok {
			p.apiKey(sp, ke.val, join(path, "api_key"))
		}
	}
	return sp
}

func (p *parser) providerName(n *yaml.Node, path string) *SearchProvider {
	name, ok := p.word(n, path)
	if !ok {
		return nil
	}
	name = strings.ToLower(name)
	switch {
	case slices.Contains(SearchProviders, name):
		return &SearchProvider{Name: name, Line: n.Line}
	case slices.Contains(otherSearchProviders, name):
		p.add(n.Line, path, "search provider %q is not supported: agentpool speaks %s (or reach another search service through an MCP server)", name, strings.Join(SearchProviders, " and "))
	default:
		p.add(n.Line, path, "unknown search provider %q%s", name, orKnown(name, SearchProviders))
	}
	return nil
}

// apiKey reads a provider's api_key: ${VAR} names the variable to read,
// anything else is the key.
func (p *parser) apiKey(sp *SearchProvider, n *yaml.Node, path string) {
	s := strings.TrimSpace(p.str(n, path))
	if m := envVarRE().FindStringSubmatch(s); m != nil && m[0] == s {
		sp.APIKeyEnv, sp.APIKey = m[1], m[3] // ${VAR:-default}: the default when VAR is unset
		return
	}
	sp.APIKey = s
}
