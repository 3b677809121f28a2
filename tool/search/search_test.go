package search

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentpool/agentpool/tool"
	"github.com/agentpool/agentpool/tool/webfetch"
)

// fake is a local provider: it records the last request and answers
// with body.
type fake struct {
	srv    *httptest.Server
	req    *http.Request
	body   []byte
	status int
	answer string
}

func newFake(t *testing.T, answer string) *fake {
	f := &fake{status: http.StatusOK, answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.req = r.Clone(context.Background())
		f.body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		io.WriteString(w, f.answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func loopback(t *testing.T) webfetch.AllowList {
	a, err := webfetch.ParseAllowList([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func env(k string) func(string) string {
	return func(name string) string {
		if name == k {
			return "secret-key"
		}
		return ""
	}
}

func tools(t *testing.T, o Options) map[string]tool.Tool {
	t.Helper()
	ts, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]tool.Tool{}
	for _, tl := range ts {
		m[tl.Info().Name] = tl
	}
	return m
}

func run(t *testing.T, tl tool.Tool, a Args) tool.Result {
	t.Helper()
	raw, _ := json.Marshal(a)
	return tool.Run(context.Background(), tl, tool.Call{ID: "1", Name: tl.Info().Name, Args: raw})
}

const tavilyAnswer = `{"query":"go","answer":null,"results":[
 {"title":"The Go Programming Language","url":"https://go.dev/","content":"Go is an open source\nprogramming language.","score":0.98},
 {"title":"Go (game)","url":"https://en.wikipedia.org/wiki/Go_(game)","content":"A board game.","score":0.5,"published_date":"Mon, 01 Dec 2026"}],
 "response_time":0.4}`

func TestTavily(t *testing.T) {
	f := newFake(t, tavilyAnswer)
	p := &Provider{Name: Tavily, BaseURL: f.srv.URL}
	ts := tools(t, Options{Web: p, News: p, Allow: loopback(t), Getenv: env("TAVILY_API_KEY")})
	res := run(t, ts[WebSearch], Args{Query: "go", MaxResults: 2, Country: "germany"})
	if res.IsError {
		t.Fatal(res.Content)
	}
	if f.req.Method != http.MethodPost || f.req.URL.Path != "/search" || f.req.Header.Get("Authorization") != "Bearer secret-key" {
		t.Fatalf("request %s %s auth %q", f.req.Method, f.req.URL.Path, f.req.Header.Get("Authorization"))
	}
	var body map[string]any
	if err := json.Unmarshal(f.body, &body); err != nil || body["query"] != "go" || body["topic"] != "general" || body["max_results"] != 2.0 || body["country"] != "germany" {
		t.Fatalf("body %s (%v)", f.body, err)
	}
	for _, want := range []string{"1. The Go Programming Language\n   https://go.dev/\n   Go is an open source programming language.", "2. Go (game)", "Mon, 01 Dec 2026"} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("result lacks %q:\n%s", want, res.Content)
		}
	}
	if strings.Contains(res.Content, "secret-key") {
		t.Error("the key is in the result")
	}
	res = run(t, ts[NewsSearch], Args{Query: "go 1.26"})
	_ = json.Unmarshal(f.body, &body)
	if res.IsError || body["topic"] != "news" || body["max_results"] != 10.0 {
		t.Fatalf("news: %s body %s", res.Content, f.body)
	}
}

func TestBrave(t *testing.T) {
	f := newFake(t, `{"type":"search","web":{"type":"search","results":[{"title":"Go","url":"https://go.dev/","description":"The <strong>Go</strong> language","age":"2 days ago"}]}}`)
	p := &Provider{Name: Brave, BaseURL: f.srv.URL, APIKeyEnv: "MY_BRAVE"}
	ts := tools(t, Options{Web: p, News: p, Allow: loopback(t), Getenv: env("MY_BRAVE")})
	res := run(t, ts[WebSearch], Args{Query: "golang", MaxResults: 50, Country: "DE", Language: "de"})
	if res.IsError || !strings.Contains(res.Content, "1. Go\n   https://go.dev/\n   2 days ago\n   The Go language") {
		t.Fatalf("web: %+v", res)
	}
	q := f.req.URL.Query()
	if f.req.URL.Path != "/web/search" || f.req.Header.Get("X-Subscription-Token") != "secret-key" ||
		q.Get("q") != "golang" || q.Get("count") != "20" || q.Get("country") != "de" || q.Get("search_lang") != "de" {
		t.Fatalf("request %s", f.req.URL)
	}
	f.answer = `{"type":"news","results":[{"title":"Go 1.26 released","url":"https://go.dev/blog/go1.26","description":"News.","age":"1 hour ago"}]}`
	res = run(t, ts[NewsSearch], Args{Query: "go release"})
	if res.IsError || f.req.URL.Path != "/news/search" || !strings.Contains(res.Content, "Go 1.26 released") {
		t.Fatalf("news: %+v (%s)", res, f.req.URL)
	}
}

func TestSearchErrors(t *testing.T) {
	f := newFake(t, `{"detail":{"error":"Unauthorized: missing or invalid API key."}}`)
	p := &Provider{Name: Tavily, BaseURL: f.srv.URL}
	// No key in the environment.
	ts := tools(t, Options{Web: p, Allow: loopback(t), Getenv: env("OTHER")})
	if _, ok := ts[NewsSearch]; ok {
		t.Fatal("news_search without a news provider")
	}
	if res := run(t, ts[WebSearch], Args{Query: "x"}); !res.IsError || res.Content != "The tavily search provider needs an API key: set TAVILY_API_KEY" {
		t.Fatalf("no key: %+v", res)
	}
	ts = tools(t, Options{Web: p, Allow: loopback(t), Getenv: env("TAVILY_API_KEY")})
	if res := run(t, ts[WebSearch], Args{}); !res.IsError || res.Content != "query is required" {
		t.Fatalf("no query: %+v", res)
	}
	f.status = http.StatusUnauthorized
	if res := run(t, ts[WebSearch], Args{Query: "x"}); !res.IsError || !strings.Contains(res.Content, "tavily search failed: HTTP 401 Unauthorized: {\"detail\":{\"error\":\"Unauthorized") {
		t.Fatalf("401: %+v", res)
	}
	f.status, f.answer = http.StatusOK, `<html>not json</html>`
	if res := run(t, ts[WebSearch], Args{Query: "x"}); !res.IsError || !strings.Contains(res.Content, "not the JSON expected") {
		t.Fatalf("bad body: %+v", res)
	}
	// Without an explicit allowance, the guard refuses the loopback
	// provider: a base_url cannot point inside the network.
	ts = tools(t, Options{Web: p, Getenv: env("TAVILY_API_KEY")})
	if res := run(t, ts[WebSearch], Args{Query: "x"}); !res.IsError || !strings.Contains(res.Content, "loopback") {
		t.Fatalf("loopback not refused: %+v", res)
	}
	if _, err := New(Options{Web: &Provider{Name: "serper"}}); err == nil || !strings.Contains(err.Error(), `unknown search provider "serper" (known: tavily, brave)`) {
		t.Fatalf("unknown provider: %v", err)
	}
}
