package webfetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/tool"
)

func call(t *testing.T, tl tool.Tool, args Args) tool.Result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Run(context.Background(), tl, tool.Call{ID: "c1", Name: WebFetch, Args: b})
}

// loopback allows the address of the test servers, which httptest serves
// on 127.0.0.1 and WebFetch refuses by default.
func loopback(t *testing.T) AllowList {
	t.Helper()
	return allow(t, "127.0.0.1")
}

func allow(t *testing.T, entries ...string) AllowList {
	t.Helper()
	a, err := ParseAllowList(entries)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// server serves mux on loopback until the test ends.
func server(t *testing.T, mux *http.ServeMux) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

const testPage = `<!DOCTYPE html>
<html><head><title> The   Page </title><style>body{color:red}</style>
<script>var x = "hidden";</script></head>
<body>
<nav><a href="/home">Home</a> <a href="/about">About</a></nav>
<h1>Main   Title</h1>
<p>First   paragraph with
a <a href="/docs/intro">relative link</a>, an <a href="https://example.org/x">absolute one</a>
and <a href="#top">an anchor</a>.</p>
<noscript>enable javascript</noscript>
<h2>List</h2>
<ul><li>one</li><li>two <b>bold</b>
  <ol><li>nested a</li><li>nested b</li></ol></li></ul>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td><td>1</td></tr></table>
<div hidden>secret</div>
<pre>  keep
    indent</pre>
<p>Last<br>line</p>
<script>document.write("no")</script>
</body></html>`

func TestHTML(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, testPage)
	})
	srv := server(t, mux)
	tl := New(Options{Allow: loopback(t)})
	r := call(t, tl, Args{URL: srv.URL + "/page", Prompt: "What is the title?"})
	if r.IsError {
		t.Fatalf("%q", r.Content)
	}
	want := "Question: What is the title?\n(Answer it from the content below.)\n\n" +
		"URL: " + srv.URL + "/page\n" +
		"Status: 200 OK\n" +
		"Content-Type: text/html; charset=utf-8\n" +
		"Title: The Page\n\n" +
		"# Main Title\n\n" +
		"First paragraph with a relative link (" + srv.URL + "/docs/intro), an absolute one (https://example.org/x) and an anchor.\n\n" +
		"## List\n\n" +
		"- one\n- two bold\n  1. nested a\n  2. nested b\n\n" +
		"Name | Value\na | 1\n\n" +
		"  keep\n    indent\n\n" +
		"Last\nline"
	if r.Content != want {
		t.Fatalf("got\n%s\nwant\n%s", r.Content, want)
	}
	for _, bad := range []string{"hidden", "color", "Home", "secret", "enable javascript", "document.write"} {
		if strings.Contains(r.Content, bad) {
			t.Errorf("%q in the text", bad)
		}
	}
	if r.Metadata["status"] != 200 || r.Metadata["truncated"] != false {
		t.Errorf("metadata %v", r.Metadata)
	}
}

func TestInfo(t *testing.T) {
	tl := New(Options{})
	i := tl.Info()
	if i.Name != WebFetch || i.Kind != tool.KindFetch {
		t.Fatalf("%+v", i)
	}
	var schema struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(i.Parameters, &schema); err != nil || strings.Join(schema.Required, ",") != "url" {
		t.Fatalf("schema %s", i.Parameters)
	}
	if got := tool.Title(tl, tool.Call{Name: WebFetch, Args: json.RawMessage(`{"url":"https://go.dev/doc"}`)}); got != "Fetch https://go.dev/doc" {
		t.Fatalf("title %q", got)
	}
	if got := tool.Title(tl, tool.Call{Name: WebFetch, Args: json.RawMessage(`{}`)}); got != "Fetch URL" {
		t.Fatalf("title %q", got)
	}
}

func TestTextAndJSON(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/a.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a": [1, 2]}`)
	})
	mux.HandleFunc("/feed", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		fmt.Fprint(w, `<feed><title>t</title></feed>`)
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=ISO-8859-1")
		w.Write([]byte("caf\xe9"))
	})
	srv := server(t, mux)
	tl := New(Options{Allow: loopback(t)})
	for path, want := range map[string]string{
		"/a.json": "Content-Type: application/json\n\n{\"a\": [1, 2]}",
		"/feed":   "Content-Type: application/atom+xml\n\n<feed><title>t</title></feed>",
		"/latin1": "Content-Type: text/plain; charset=ISO-8859-1\n\ncafé",
	} {
		r := call(t, tl, Args{URL: srv.URL + path})
		if r.IsError || !strings.HasSuffix(r.Content, want) {
			t.Errorf("%s: %q", path, r.Content)
		}
	}
}

func TestRedirects(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/r/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/ftp", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "ftp://example.org/file", http.StatusFound)
	})
	srv := server(t, mux)
	tl := New(Options{Client: srv.Client(), Allow: loopback(t)})
	r := call(t, tl, Args{URL: srv.URL + "/r/5"})
	if r.IsError || !strings.HasPrefix(r.Content, "URL: "+srv.URL+"/r/0\nRequested URL: "+srv.URL+"/r/5\nStatus: 200 OK\n") || !strings.HasSuffix(r.Content, "\n\narrived") {
		t.Fatalf("%q", r.Content)
	}
	r = call(t, tl, Args{URL: srv.URL + "/r/6"})
	if !r.IsError || !strings.Contains(r.Content, "stopped after 5 redirects") {
		t.Fatalf("%q", r.Content)
	}
	r = call(t, tl, Args{URL: srv.URL + "/ftp"})
	if !r.IsError || !strings.Contains(r.Content, "only http and https") {
		t.Fatalf("%q", r.Content)
	}
}

func TestSizeLimit(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", 5000))
	})
	mux.HandleFunc("/long", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("é", maxChars+10))
	})
	srv := server(t, mux)
	r := call(t, New(Options{MaxBytes: 1000, Allow: loopback(t)}), Args{URL: srv.URL + "/big"})
	if r.IsError || !strings.Contains(r.Content, "Note: the response was cut at 1000 bytes (the size limit); the rest was not read.\n\n"+strings.Repeat("x", 1000)) ||
		strings.Contains(r.Content, strings.Repeat("x", 1001)) || r.Metadata["truncated"] != true {
		t.Fatalf("%q", r.Content)
	}
	r = call(t, New(Options{Allow: loopback(t)}), Args{URL: srv.URL + "/long"})
	if r.IsError || !strings.Contains(r.Content, "Note: the text was cut at 100000 characters; 10 more were not shown.\n\n") ||
		!strings.HasSuffix(r.Content, "\n\n"+strings.Repeat("é", maxChars)) {
		t.Fatalf("%.300q", r.Content)
	}
}

func TestTimeout(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	srv := server(t, mux)
	start := time.Now()
	r := call(t, New(Options{Timeout: 100 * time.Millisecond, Allow: loopback(t)}), Args{URL: srv.URL + "/slow"})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s", d)
	}
	if !r.IsError || r.Content != "Fetching "+srv.URL+"/slow timed out after 100ms." {
		t.Fatalf("%q", r.Content)
	}
}

func TestSchemeRefused(t *testing.T) {
	tl := New(Options{})
	for _, u := range []string{"file:///etc/passwd", "ftp://example.org/", "javascript:alert(1)", "example.org/page"} {
		r := call(t, tl, Args{URL: u})
		if !r.IsError || !strings.Contains(r.Content, "Only http and https URLs can be fetched") {
			t.Errorf("%s: %q", u, r.Content)
		}
	}
	if r := call(t, tl, Args{URL: "http://"}); !r.IsError || !strings.Contains(r.Content, "no host") {
		t.Errorf("%q", r.Content)
	}
}

func TestHTTPError(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, "<html><body><h1>Not here</h1></body></html>")
	})
	srv := server(t, mux)
	r := call(t, New(Options{Allow: loopback(t)}), Args{URL: srv.URL + "/gone"})
	want := "HTTP error 404 Not Found fetching " + srv.URL + "/gone\n\nURL: " + srv.URL + "/gone\nStatus: 404 Not Found\nContent-Type: text/html\n\n# Not here"
	if !r.IsError || r.Content != want || r.Metadata["status"] != 404 {
		t.Fatalf("%q", r.Content)
	}
	// A closed server: connection refused.
	u, _ := url.Parse(srv.URL)
	srv.Close()
	r = call(t, New(Options{Allow: loopback(t)}), Args{URL: "http://" + u.Host + "/"})
	if !r.IsError || !strings.HasPrefix(r.Content, "Fetching http://"+u.Host+"/ failed: ") {
		t.Fatalf("%q", r.Content)
	}
}

func TestBinaryDescribed(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 2000)...)
	mux := http.NewServeMux()
	mux.HandleFunc("/img", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	})
	mux.HandleFunc("/sniffed", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no sniffing by the server
		w.Write(png)
	})
	mux.HandleFunc("/octet", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		fmt.Fprint(w, "plain text after all\n")
	})
	srv := server(t, mux)
	tl := New(Options{Allow: loopback(t)})
	r := call(t, tl, Args{URL: srv.URL + "/img"})
	if r.IsError || !strings.HasSuffix(r.Content, "Content-Type: image/png\n\n(Binary content of type image/png, 2008 bytes; not shown.)") {
		t.Fatalf("%q", r.Content)
	}
	r = call(t, tl, Args{URL: srv.URL + "/sniffed"})
	if r.IsError || !strings.Contains(r.Content, "Content-Type: image/png (sniffed; the server sent none)") || !strings.Contains(r.Content, "(Binary content of type image/png, 2008 bytes; not shown.)") {
		t.Fatalf("%q", r.Content)
	}
	r = call(t, tl, Args{URL: srv.URL + "/octet"})
	if r.IsError || !strings.HasSuffix(r.Content, "\n\nplain text after all\n") {
		t.Fatalf("%q", r.Content)
	}
}
