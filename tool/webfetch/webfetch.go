package webfetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentpool/agentpool/tool"
)

// WebFetch is the tool's name (Claude Code's).
const WebFetch = "WebFetch"

// Defaults of Options.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultMaxBytes = 5 << 20
)

const (
	// maxChars bounds the text of a result.
	maxChars = 100000
	// maxRedirects is how many redirects are followed.
	maxRedirects = 5
	// maxErrorChars bounds the body shown with an HTTP error.
	maxErrorChars = 2000
)

// Options configure the WebFetch tool.
type Options struct {
	// Client makes the requests (its Transport, Jar...). Nil: a client
	// over http.DefaultTransport. Its Transport must be nil or an
	// *http.Transport: WebFetch uses a copy of it whose dialer refuses
	// addresses that are not public unless Allow allows them, and which
	// uses no proxy. Any other Transport makes every fetch fail, saying so.
	// Its CheckRedirect is wrapped to follow at most 5 redirects, to http
	// and https URLs only.
	Client *http.Client
	// Allow lists the hosts and networks that may be reached although they
	// are not public (the fetch toolset's allowed_hosts).
	Allow AllowList
	// Timeout bounds a whole fetch, body included. 0: DefaultTimeout.
	Timeout time.Duration
	// MaxBytes bounds the body bytes read. 0: DefaultMaxBytes.
	MaxBytes int64
}

// Args is the input of WebFetch (Claude Code's fields).
type Args struct {
	URL    string `json:"url" jsonschema_description:"The URL to fetch (http or https)"`
	Prompt string `json:"prompt,omitempty" jsonschema_description:"What you want to learn from the page; it is repeated at the top of the result for you to answer from the content"`
}

const description = `Fetches a URL (HTTP GET, http or https only, up to 5 redirects) and returns its content as text: HTML pages are turned into readable text (headings as # lines, list items as - lines, links as "text (url)"); plain text, JSON and XML are returned as they are; other content (images, PDFs, archives) is described, not shown. The result starts with the final URL, the HTTP status and the content type; long content is cut at 100000 characters (the result says so). An HTTP error status (4xx, 5xx) is an error result. prompt, what you want from the page, is repeated at the top of the result: answer it from the content yourself.`

// New returns the WebFetch tool.
func New(opts Options) tool.Tool {
	f := &fetcher{timeout: opts.Timeout, maxBytes: opts.MaxBytes}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	if f.maxBytes <= 0 {
		f.maxBytes = DefaultMaxBytes
	}
	c := &http.Client{}
	if opts.Client != nil {
		cc := *opts.Client
		c = &cc
	}
	if t, err := guardedTransport(c.Transport, opts.Allow); err != nil {
		f.misconfigured = err
	} else {
		c.Transport = t
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if s := req.URL.Scheme; s != "http" && s != "https" {
			return fmt.Errorf("redirect to %s refused: only http and https URLs are fetched", req.URL.Redacted())
		}
		if next != nil {
			return next(req, via)
		}
		return nil
	}
	f.client = c
	f.inner = tool.New(WebFetch, description, f.fetch)
	return f
}

type fetcher struct {
	inner         tool.Tool
	client        *http.Client
	timeout       time.Duration
	maxBytes      int64
	misconfigured error // set: every fetch fails with it
}

func (f *fetcher) Info() tool.Info {
	i := f.inner.Info()
	i.Kind = tool.KindFetch
	return i
}

func (f *fetcher) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	return f.inner.Call(ctx, call)
}

// Title is "Fetch URL" followed by the URL when there is one.
func (f *fetcher) Title(call tool.Call) string {
	var a Args
	_ = json.Unmarshal(call.Args, &a)
	u := strings.TrimSpace(a.URL)
	if u == "" {
		return "Fetch URL"
	}
	if utf8.RuneCountInString(u) > 100 {
		u = string([]rune(u)[:99]) + "…"
	}
	return "Fetch " + u
}

// page is a fetched response, read.
type page struct {
	final       *url.URL
	status      int
	contentType string // as sent
	mediaType   string // parsed or sniffed
	charset     string
	body        []byte
	bodyCut     bool  // more than maxBytes
	size        int64 // Content-Length, -1 unknown
	readErr     error
}

func (f *fetcher) fetch(ctx context.Context, _ tool.Call, a Args) (tool.Result, error) {
	raw := strings.TrimSpace(a.URL)
	if raw == "" {
		return tool.Errorf("url is required"), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return tool.Errorf("Invalid URL %q: %v", raw, err), nil
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return tool.Errorf("Only http and https URLs can be fetched; %q is not one.", raw), nil
	}
	if u.Host == "" {
		return tool.Errorf("Invalid URL %q: no host.", raw), nil
	}
	if f.misconfigured != nil {
		return tool.Errorf("Fetching %s failed: %v", raw, f.misconfigured), nil
	}
	start := time.Now()
	tctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	p, err := f.get(tctx, u)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return tool.Errorf("Fetching %s was cancelled.", raw), nil
		case tctx.Err() != nil:
			return tool.Errorf("Fetching %s timed out after %s.", raw, f.timeout), nil
		}
		if r, ok := refusal(raw, u, err); ok {
			return r, nil
		}
		return tool.Errorf("Fetching %s failed: %v", raw, unwrapURLError(err)), nil
	}
	return f.render(a, raw, p, time.Since(start)), nil
}

// refusal is the result for a fetch of u (requested as written) whose
// connection the address check refused: the URL refused (a redirect's
// target, when it led to another host), why, and how to allow it.
func refusal(requested string, u *url.URL, err error) (tool.Result, bool) {
	var refused *refusedError
	if !errors.As(err, &refused) {
		return tool.Result{}, false
	}
	at := requested
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" && !strings.EqualFold(refused.host, u.Hostname()) {
		at = ue.URL + " (redirected from " + requested + ")"
	}
	return tool.Errorf("WebFetch refused %s: %v; allow it with allowed_hosts in the fetch toolset", at, refused), true
}

// unwrapURLError drops the "Get \"url\": " prefix of client errors.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func (f *fetcher) get(ctx context.Context, u *url.URL) (*page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "agentpool-webfetch/1.0 (+https://github.com/agentpool/agentpool)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.8")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	p := &page{final: resp.Request.URL, status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), size: resp.ContentLength}
	p.body, p.readErr = io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if int64(len(p.body)) > f.maxBytes {
		p.body, p.bodyCut = p.body[:f.maxBytes], true
	}
	if p.readErr != nil && len(p.body) == 0 {
		return nil, p.readErr
	}
	mt, params, err := mime.ParseMediaType(p.contentType)
	if p.contentType == "" || err != nil {
		mt, params, _ = mime.ParseMediaType(http.DetectContentType(p.body))
	}
	p.mediaType, p.charset = strings.ToLower(mt), strings.ToLower(params["charset"])
	return p, nil
}

// Kinds of content.
const (
	kindHTML = iota
	kindText
	kindBinary
)

func classify(p *page) int {
	mt := p.mediaType
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", strings.HasSuffix(mt, "+json"), mt == "application/x-ndjson",
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/x-javascript", mt == "application/ecmascript",
		mt == "application/yaml", mt == "application/x-yaml", mt == "application/toml",
		mt == "application/x-sh", mt == "application/sql", mt == "application/graphql":
		return kindText
	case mt == "application/octet-stream" || mt == "":
		if looksText(p.body) {
			return kindText
		}
	}
	return kindBinary
}

// looksText reports whether b's start is UTF-8 text without NUL bytes.
func looksText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	b = b[:min(len(b), 8192)]
	for _, c := range b {
		if c == 0 {
			return false
		}
	}
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			return len(b) < utf8.UTFMax // a character cut at the end
		}
		b = b[n:]
	}
	return true
}

// decode returns the body as UTF-8 text: Latin-1 (and Windows-1252, as
// Latin-1) is converted; other charsets are taken as UTF-8.
func decode(p *page) string {
	switch p.charset {
	case "iso-8859-1", "latin1", "latin-1", "windows-1252", "cp1252", "us-ascii", "ascii":
		r := make([]rune, len(p.body))
		for i, c := range p.body {
			r[i] = rune(c)
		}
		return string(r)
	}
	return strings.ToValidUTF8(string(p.body), "\uFFFD")
}

// render builds the result: the question, the header lines, a blank line,
// the content.
func (f *fetcher) render(a Args, requested string, p *page, took time.Duration) tool.Result {
	var head, notes []string
	if q := strings.TrimSpace(a.Prompt); q != "" {
		head = append(head, "Question: "+q, "(Answer it from the content below.)", "")
	}
	head = append(head, "URL: "+p.final.String())
	if p.final.String() != requested {
		head = append(head, "Requested URL: "+requested)
	}
	head = append(head, fmt.Sprintf("Status: %d %s", p.status, http.StatusText(p.status)))
	ct := p.contentType
	if ct == "" {
		ct = p.mediaType + " (sniffed; the server sent none)"
	}
	head = append(head, "Content-Type: "+ct)

	kind := classify(p)
	var content string
	switch kind {
	case kindHTML:
		title, text := htmlToText([]byte(decode(p)), p.final)
		if title != "" {
			head = append(head, "Title: "+title)
		}
		content = text
	case kindText:
		content = decode(p)
	default:
		content = fmt.Sprintf("(Binary content of type %s, %s; not shown.)", p.mediaType, sizeOf(p))
	}
	if p.bodyCut {
		notes = append(notes, fmt.Sprintf("Note: the response was cut at %d bytes (the size limit); the rest was not read.", len(p.body)))
	}
	if p.readErr != nil {
		notes = append(notes, fmt.Sprintf("Note: reading the response stopped after %d bytes: %v.", len(p.body), p.readErr))
	}
	limit := maxChars
	if p.status >= 400 {
		limit = maxErrorChars
	}
	textCut := false
	if n := utf8.RuneCountInString(content); n > limit {
		textCut = true
		content = string([]rune(content)[:limit])
		notes = append(notes, fmt.Sprintf("Note: the text was cut at %d characters; %d more were not shown.", limit, n-limit))
	}
	if strings.TrimSpace(content) == "" {
		content = "(empty)"
	}
	md := map[string]any{
		"url": p.final.String(), "status": p.status, "content_type": p.contentType,
		"bytes": len(p.body), "truncated": p.bodyCut || textCut, "duration_ms": took.Milliseconds(),
	}
	text := strings.Join(append(head, notes...), "\n") + "\n\n" + content
	if p.status >= 400 {
		return tool.Result{Content: fmt.Sprintf("HTTP error %d %s fetching %s\n\n%s", p.status, http.StatusText(p.status), requested, text), IsError: true, Metadata: md}
	}
	return tool.Result{Content: text, Metadata: md}
}

func sizeOf(p *page) string {
	switch {
	case p.size >= 0:
		return fmt.Sprintf("%d bytes", p.size)
	case p.bodyCut:
		return fmt.Sprintf("more than %d bytes", len(p.body))
	}
	return fmt.Sprintf("%d bytes", len(p.body))
}
