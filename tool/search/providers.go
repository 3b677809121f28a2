package search

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// tavily: POST {base}/search with a JSON body and the key as a bearer
// token; topic "news" for news_search. Results: results[].title, url,
// content, published_date (news).
func (s *searcher) tavily(ctx context.Context, base, key, q string, n int, a Args) ([]result, error) {
	body := map[string]any{"query": q, "max_results": n, "topic": "general"}
	if s.news {
		body["topic"] = "news"
	}
	if c := strings.TrimSpace(a.Country); c != "" && !s.news {
		body["country"] = c
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/search", bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	var resp struct {
		Results []struct {
			Title         string `json:"title"`
			URL           string `json:"url"`
			Content       string `json:"content"`
			PublishedDate string `json:"published_date"`
		} `json:"results"`
	}
	if err := s.do(req, &resp); err != nil {
		return nil, err
	}
	var out []result
	for _, r := range resp.Results {
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: r.Content, Date: r.PublishedDate})
	}
	return out, nil
}

// brave: GET {base}/web/search or {base}/news/search?q=...&count=N with
// the key in X-Subscription-Token. Results: web.results[] (web) or
// results[] (news), each title, url, description, age.
func (s *searcher) brave(ctx context.Context, base, key, q string, n int, a Args) ([]result, error) {
	path := "/web/search"
	if s.news {
		path = "/news/search"
	}
	v := url.Values{"q": {q}, "count": {strconv.Itoa(n)}}
	if c := strings.TrimSpace(a.Country); c != "" {
		v.Set("country", strings.ToLower(c))
	}
	if l := strings.TrimSpace(a.Language); l != "" {
		v.Set("search_lang", strings.ToLower(l))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+path+"?"+v.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Subscription-Token", key)
	type item struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Description string `json:"description"`
		Age         string `json:"age"`
	}
	var resp struct {
		Web struct {
			Results []item `json:"results"`
		} `json:"web"`
		Results []item `json:"results"`
	}
	if err := s.do(req, &resp); err != nil {
		return nil, err
	}
	items := resp.Web.Results
	if s.news {
		items = resp.Results
	}
	var out []result
	for _, r := range items {
		out = append(out, result{Title: r.Title, URL: r.URL, Snippet: stripTags(r.Description), Date: r.Age})
	}
	return out, nil
}

// stripTags removes the <strong> marks Brave puts around query words.
func stripTags(s string) string {
	for _, t := range []string{"<strong>", "</strong>", "<b>", "</b>"} {
		s = strings.ReplaceAll(s, t, "")
	}
	return s
}
