package opencode

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/httpsec/httpsectest"
	"github.com/agentpool/agentpool/session/sqlite"
)

// heapInUse is the heap in use after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// sqlitePool is a pool of manifest src on a SQLite store of its own: the
// store keeps the conversations on disk, not in the heap.
func sqlitePool(t *testing.T, src string) *pool.Pool {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := config.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// bodyOfSize is a prompt body of exactly n bytes.
func bodyOfSize(n int) string {
	overhead := len(promptBody(""))
	return promptBody(strings.Repeat("x", n-overhead))
}

const (
	slothYAML = `
agents:
  sloth:
    model: {type: scripted, delay: 1h, turns: [{text: "not soon"}]}
`
	quickYAML = `
agents:
  quick:
    model: {type: scripted, turns: [{text: "done"}]}
`
)

// TestOpenCodePromptMemory (issue 31): 80 sessions with one 7 MiB
// prompt_async each made the server hold 2.2 GB. Only prompts waiting
// behind a running one were counted; the running ones, the bodies being
// received and the texts the transcripts kept after the runs were not.
// Now every prompt is counted from before its body is read to the end of
// its run, per session and per server, in number and bytes; the excess is
// refused with 429 (413 when it alone is over a bound), naming the bound;
// and a transcript keeps a long prompt text cut once the store has it.
func TestOpenCodePromptMemory(t *testing.T) {
	t.Run("running prompts count", func(t *testing.T) {
		noLeaks(t)
		const body, bound = 4 << 20, 16 << 20
		s, base := newServer(t, sqlitePool(t, slothYAML), Options{MaxPromptBytes: bound})
		sessions := make([]string, 24)
		for i := range sessions {
			sessions[i] = str(createSession(t, base, "")["id"])
		}
		before := heapInUse()
		accepted := 0
		for _, sid := range sessions { // one prompt each: every one would run at once
			code, v := call(t, "POST", base+"/session/"+sid+"/prompt_async", bodyOfSize(body))
			switch {
			case code == http.StatusNoContent:
				accepted++
			case code != http.StatusTooManyRequests || get(v, "name") != "QueueFullError" ||
				!strings.Contains(str(get(v, "data", "message")), fmt.Sprintf("bound of %d bytes", bound)):
				t.Fatalf("prompt past the server's bound: %d %v", code, v)
			}
		}
		grown := heapInUse() - before
		if accepted != bound/body {
			t.Errorf("%d prompts of %d bytes accepted under a bound of %d bytes, want %d", accepted, body, bound, bound/body)
		}
		held := s.budget.inUse()
		if held.prompts != accepted || held.bytes != accepted*body {
			t.Errorf("the server holds %+v, want %d prompts of %d bytes", held, accepted, body)
		}
		// The prompts' text once each, and what their runs need; not the
		// 96 MiB offered.
		if grown > 2*bound {
			t.Errorf("the heap grew by %d MiB for prompts bounded to %d MiB", grown>>20, bound>>20)
		}
		for _, sid := range sessions {
			mustCall(t, http.StatusOK, "POST", base+"/session/"+sid+"/abort", "")
		}
		held = s.budget.inUse()
		if held != (heldPrompts{}) {
			t.Errorf("after every abort the server still holds %+v", held)
		}
	})

	t.Run("per session and per server", func(t *testing.T) {
		noLeaks(t)
		p := newPool(t, slothYAML)
		s, base := newServer(t, p, Options{MaxSessionPromptBytes: 5 << 20})
		sid := str(createSession(t, base, "")["id"])
		async := base + "/session/" + sid + "/prompt_async"
		mustCall(t, http.StatusNoContent, "POST", async, bodyOfSize(2<<20))
		mustCall(t, http.StatusNoContent, "POST", async, bodyOfSize(2<<20))
		code, v := call(t, "POST", async, bodyOfSize(2<<20))
		if code != http.StatusTooManyRequests || !strings.Contains(str(get(v, "data", "message")), "bound of 5242880 bytes per session") {
			t.Errorf("past the session's bytes: %d %v", code, v)
		}
		other := str(createSession(t, base, "")["id"])
		code, v = call(t, "POST", base+"/session/"+other+"/prompt_async", bodyOfSize(6<<20))
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(str(get(v, "data", "message")), "larger than the 5242880 bytes the prompts of one session may hold") {
			t.Errorf("a prompt larger than a session may hold: %d %v", code, v)
		}
		// Without a Content-Length (chunked) the most a prompt may be is
		// reserved, then what arrived counts.
		chunked := func(sid string, n int) (int, any) {
			t.Helper()
			req, err := http.NewRequest("POST", base+"/session/"+sid+"/prompt_async", io.MultiReader(strings.NewReader(bodyOfSize(n))))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var v any
			json.NewDecoder(resp.Body).Decode(&v)
			return resp.StatusCode, v
		}
		if code, v = chunked(other, 6<<20); code != http.StatusRequestEntityTooLarge ||
			!strings.Contains(str(get(v, "data", "message")), "a prompt of 6291456 bytes is larger than the 5242880 bytes") {
			t.Errorf("a chunked prompt larger than a session may hold: %d %v", code, v)
		}
		if code, v = chunked(other, 1<<20); code != http.StatusNoContent {
			t.Errorf("a chunked prompt of 1 MiB: %d %v", code, v)
		}
		held := s.budget.inSession(other)
		if held != (heldPrompts{prompts: 1, bytes: 1 << 20}) {
			t.Errorf("a chunked prompt of 1 MiB holds %+v", held)
		}
		mustCall(t, http.StatusOK, "POST", base+"/session/"+sid+"/abort", "")
		mustCall(t, http.StatusOK, "POST", base+"/session/"+other+"/abort", "")

		_, few := newServer(t, p, Options{MaxPrompts: 3})
		for i := range 3 {
			mustCall(t, http.StatusNoContent, "POST", few+"/session/"+str(createSession(t, few, "")["id"])+"/prompt_async", promptBody(fmt.Sprint("p", i)))
		}
		code, v = call(t, "POST", few+"/session/"+str(createSession(t, few, "")["id"])+"/prompt_async", promptBody("one more"))
		if code != http.StatusTooManyRequests || !strings.Contains(str(get(v, "data", "message")), "already holds 3 prompts") {
			t.Errorf("past the server's prompts: %d %v", code, v)
		}
	})

	t.Run("bodies being received count", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			const bound = 1 << 20
			s := New(newPool(t, slowYAML), Options{Directory: "/work/project", MaxPromptBytes: bound})
			ln := serveServer(t, s)
			sid := bubbleSession(t, ln)
			head := func(n int) string {
				return fmt.Sprintf("POST /session/%s/prompt_async HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", sid, n)
			}
			slow := ln.Dial()
			defer slow.Close()
			httpsectest.Send(slow, head(800<<10)+`{"parts":[`)
			synctest.Wait()
			held := s.budget.inUse()
			if held != (heldPrompts{prompts: 1, bytes: 800 << 10}) {
				t.Errorf("while its body arrives a prompt holds %+v, want its Content-Length", held)
			}
			// Refused by their Content-Length: the body is read and let
			// go (the client, sending it, gets the answer), never kept.
			for _, c := range []struct {
				length int
				status int
				says   string
			}{
				{800 << 10, http.StatusTooManyRequests, "bound of 1048576 bytes"},
				{2 << 20, http.StatusRequestEntityTooLarge, "larger than the 1048576 bytes the prompts on this server may hold"},
				{9 << 20, http.StatusRequestEntityTooLarge, "request body larger than 8388608 bytes"},
			} {
				conn := ln.Dial()
				begin := time.Now()
				httpsectest.Send(conn, head(c.length)+bodyOfSize(c.length))
				res, body, err := httpsectest.Response(conn)
				conn.Close()
				if err != nil || res.StatusCode != c.status || !strings.Contains(body, c.says) || time.Since(begin) != 0 {
					t.Errorf("Content-Length %d: %v %v %s after %s; want %d at once, saying %q", c.length, res, err, body, time.Since(begin), c.status, c.says)
				}
				held = s.budget.inUse()
				if held != (heldPrompts{prompts: 1, bytes: 800 << 10}) {
					t.Errorf("after the refusal of %d bytes the server holds %+v", c.length, held)
				}
			}
			if res, body, err := httpsectest.Response(slow); err != nil || res.StatusCode != http.StatusRequestTimeout {
				t.Errorf("the stalled body: %v %v %s", res, err, body)
			}
			held = s.budget.inUse()
			if held != (heldPrompts{}) {
				t.Errorf("after the stalled body timed out the server holds %+v", held)
			}
		})
	})

	t.Run("ended prompts leave memory", func(t *testing.T) {
		noLeaks(t)
		const n, size = 16, 1 << 20
		p := sqlitePool(t, quickYAML)
		_, base := newServer(t, p, Options{})
		sessions := make([]string, n)
		for i := range sessions {
			sessions[i] = str(createSession(t, base, "")["id"])
		}
		text := func(i int) string { return fmt.Sprintf("%02d", i) + strings.Repeat("y", size) }
		before := heapInUse()
		for i, sid := range sessions {
			body := promptBody(text(i))
			switch i % 4 {
			case 0: // stored without a run
				body = `{"noReply":true,"parts":[{"type":"text","text":"` + text(i) + `"}]}`
			case 1: // its text is part of the prompt's
				body = `{"parts":[{"type":"text","text":"` + text(i) + `"},{"type":"agent","name":"quick"},{"type":"text","text":"tail"}]}`
			}
			mustCall(t, http.StatusOK, "POST", base+"/session/"+sid+"/message", body)
		}
		if grown := heapInUse() - before; grown > 4<<20 {
			t.Errorf("the heap grew by %d MiB after %d prompts of 1 MiB had ended", grown>>20, n)
		}
		for i, sid := range sessions {
			msgs := mustCall(t, http.StatusOK, "GET", base+"/session/"+sid+"/message", "").([]any)
			parts := obj(msgs[0])["parts"].([]any)
			if got := str(get(parts[0], "text")); got != text(i) {
				t.Fatalf("session %d: the prompt reads back as %d bytes %.20q..., want the whole %d bytes", i, len(got), got, len(text(i)))
			}
			if i%4 == 1 && (len(parts) != 3 || get(parts[1], "type") != "agent" || get(parts[2], "text") != "tail") {
				t.Errorf("session %d: the parts after the long one: %v", i, parts[1:])
			}
		}
		// A transcript rebuilt from the store (another server) keeps it
		// cut too, and answers it whole.
		_, again := newServer(t, p, Options{})
		mustCall(t, http.StatusOK, "POST", again+"/session/"+sessions[2]+"/message", promptBody("and then?"))
		msgs := mustCall(t, http.StatusOK, "GET", again+"/session/"+sessions[2]+"/message", "").([]any)
		if got := str(get(obj(msgs[0])["parts"].([]any)[0], "text")); got != text(2) {
			t.Fatalf("rebuilt transcript: the prompt reads back as %d bytes, want %d", len(got), len(text(2)))
		}
	})
}
