package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/webfetch"
)

// Tool names, AgentPool's.
const (
	WebSearch  = "web_search"
	NewsSearch = "news_search"
)

// Providers.
const (
	Tavily = "tavily"
	Brave  = "brave"
)

// Providers lists the providers this package speaks.
var Providers = []string{Tavily, Brave}

// Bounds.
const (
	maxBody        = 2 << 20
	maxResults     = 20
	defaultResults = 10
	DefaultTimeout = 30 * time.Second
)

// KeyEnv is the environment variable each provider's key is read from
// when the manifest names none.
var KeyEnv = map[string]string{Tavily: "TAVILY_API_KEY", Brave: "BRAVE_API_KEY"}

// defaultBase is each provider's API address.
var defaultBase = map[string]string{Tavily: "https://api.tavily.com", Brave: "https://api.search.brave.com/res/v1"}

// Provider is one configured provider.
type Provider struct {
	Name string // Tavily or Brave
	// APIKeyEnv names the environment variable holding the key ("":
	// KeyEnv[Name]); it is read at each call.
	APIKeyEnv string
	// APIKey is the key when the variable is unset or not named.
	APIKey string
	// BaseURL replaces the provider's API address (tests: a local fake).
	BaseURL string
}

// Options configures the toolset; a nil provider leaves its tool out.
type Options struct {
	Web, News *Provider
	// Allow lists non-public hosts and networks the requests may reach
	// (webfetch.AllowList); tests allow their loopback server here.
	Allow   webfetch.AllowList
	Timeout time.Duration // 0: DefaultTimeout
	// Getenv reads the key (nil: os.Getenv).
	Getenv func(string) string
}

// New returns the search tools Options configures: web_search when Web
// is set, news_search when News is.
func New(o Options) ([]tool.Tool, error) {
	tr, err := webfetch.GuardedTransport(nil, o.Allow)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	c := &http.Client{Transport: tr, Timeout: o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var out []tool.Tool
	for _, s := range []struct {
		p          *Provider
		name, desc string
		news       bool
	}{{o.Web, WebSearch, webDescription, false}, {o.News, NewsSearch, newsDescription, true}} {
		if s.p == nil {
			continue
		}
		if _, ok := defaultBase[s.p.Name]; !ok {
			return nil, fmt.Errorf("unknown search provider %q (known: %s)", s.p.Name, strings.Join(Providers, ", "))
		}
		sr := &searcher{p: *s.p, news: s.news, client: c, getenv: o.Getenv}
		out = append(out, tool.WithKind(tool.New(s.name, fmt.Sprintf(s.desc, s.p.Name), sr.search), tool.KindFetch))
	}
	return out, nil
}

const (
	webDescription  = "Search the web (with %s) and return the results: title, URL and a snippet of each. Use WebFetch to read a result's page."
	newsDescription = "Search recent news articles (with %s) and return them: title, URL, date and a snippet of each."
)

// Args is the input of web_search and news_search (AgentPool's fields).
type Args struct {
	Query      string `json:"query" jsonschema:"description=The search query"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"description=How many results to return (1-20, default 10)"`
	Country    string `json:"country,omitempty" jsonschema:"description=Two-letter country code for regional results (us, de, ...)"`
	Language   string `json:"language,omitempty" jsonschema:"description=Two-letter language code of the results (en, de, ...)"`
}

// result is one search result.
type result struct {
	Title, URL, Snippet, Date string
}

type searcher struct {
	p      Provider
	news   bool
	client *http.Client
	getenv func(string) string
}

func (s *searcher) search(ctx context.Context, _ tool.Call, a Args) (tool.Result, error) {
	q := strings.TrimSpace(a.Query)
	if q == "" {
		return tool.Errorf("query is required"), nil
	}
	n := a.MaxResults
	if n <= 0 {
		n = defaultResults
	}
	n = min(n, maxResults)
	env := s.p.APIKeyEnv
	if env == "" {
		env = KeyEnv[s.p.Name]
	}
	key := strings.TrimSpace(s.getenv(env))
	if key == "" {
		key = s.p.APIKey
	}
	if key == "" {
		return tool.Errorf("The %s search provider needs an API key: set %s", s.p.Name, env), nil
	}
	base := s.p.BaseURL
	if base == "" {
		base = defaultBase[s.p.Name]
	}
	var (
		rs  []result
		err error
	)
	switch s.p.Name {
	case Tavily:
		rs, err = s.tavily(ctx, base, key, q, n, a)
	case Brave:
		rs, err = s.brave(ctx, base, key, q, n, a)
	}
	if err != nil {
		return tool.Errorf("%s search failed: %v", s.p.Name, err), nil
	}
	if len(rs) > n {
		rs = rs[:n]
	}
	return tool.Result{Content: render(q, rs), Metadata: map[string]any{"provider": s.p.Name, "results": len(rs)}}, nil
}

func render(q string, rs []result) string {
	if len(rs) == 0 {
		return fmt.Sprintf("No results for %q.", q)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for %q:\n", q)
	for i, r := range rs {
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, oneLine(r.Title), r.URL)
		if r.Date != "" {
			fmt.Fprintf(&b, "   %s\n", oneLine(r.Date))
		}
		if r.Snippet != "" {
			fmt.Fprintf(&b, "   %s\n", oneLine(r.Snippet))
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// do sends req and decodes the JSON body into v; a status other than 200
// is an error quoting the start of the body.
func (s *searcher) do(req *http.Request, v any) error {
	req.Header.Set("Accept", "application/json")
	req.Close = true // searches are occasional: no idle connection is kept
	resp, err := s.client.Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap()
		}
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("reading the response: %w", err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("the response is larger than %d bytes", maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		msg := oneLine(string(body))
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return fmt.Errorf("HTTP %s: %s", resp.Status, msg)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("the response is not the JSON expected: %v", err)
	}
	return nil
}
