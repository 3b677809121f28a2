package agui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpool/agentpool/hook"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/server/agui/internal/wire"
	"github.com/agentpool/agentpool/server/httpsec/httpsectest"
	"github.com/agentpool/agentpool/server/internal/servertest"
)

// arrival is one word of a text delta as the client read it, with the
// (virtual) time it arrived, counted from the request.
type arrival struct {
	at   time.Duration
	word string
}

// pacedRun runs a model that streams words, one every every (virtual
// time), through a server with the given FlushInterval, and returns when
// each word reached the client (the words of the text deltas, which the
// server may have joined) and how many text deltas carried them. The
// words arrive all, in order.
func pacedRun(t *testing.T, flush, every time.Duration, words int) ([]arrival, int) {
	t.Helper()
	var text []string
	for i := 1; i <= words; i++ {
		text = append(text, fmt.Sprintf("w%d", i))
	}
	src := fmt.Sprintf("agents:\n  pacer:\n    model: {type: scripted, delay: %s, turns: [{text: %q}]}\n", every, strings.Join(text, " "))
	ln := serveBubble(t, New(servertest.Pool(t, src), Options{FlushInterval: flush}))
	c := ln.Dial()
	defer c.Close()
	start := time.Now()
	httpsectest.Send(c, runRequest("/", runBody("t-paced", "go")))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("run: %v %v", res, err)
	}
	defer res.Body.Close()
	var got []arrival
	deltas := 0
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct{ Type, Delta string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if e.Type == wire.TypeTextMessageContent {
			deltas++
			for _, w := range strings.Fields(e.Delta) {
				got = append(got, arrival{at: time.Since(start), word: w})
			}
		}
		if e.Type == wire.TypeRunFinished {
			break
		}
	}
	for k, a := range got {
		if want := fmt.Sprintf("w%d", k+1); a.word != want {
			t.Fatalf("word %d is %q, want %q: %v", k+1, a.word, want, got)
		}
	}
	if len(got) != words {
		t.Fatalf("%d words, want %d: %v", len(got), words, got)
	}
	return got, deltas
}

// emitted is when the model emitted word k (from 0): it sleeps every
// before each chunk.
func emitted(k int, every time.Duration) time.Duration { return time.Duration(k+1) * every }

// TestFlushIntervalSharesWrites: a model's words 5 ms apart share writes:
// two writes are at least FlushInterval apart, several words arrive
// together, joined into fewer deltas, and no word waits longer than the
// interval.
func TestFlushIntervalSharesWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every, flush = 5 * time.Millisecond, 20 * time.Millisecond
		got, deltas := pacedRun(t, flush, every, 24)
		writes, most, n := 1, 1, 1
		for k, a := range got {
			if e := emitted(k, every); a.at < e || a.at > e+flush {
				t.Errorf("word %d emitted at %v arrived at %v: want within %v", k+1, e, a.at, flush)
			}
			if k == 0 {
				continue
			}
			switch gap := a.at - got[k-1].at; {
			case gap == 0:
				n++
				most = max(most, n)
			case gap < flush:
				t.Errorf("writes %v apart (at %v and %v), want %v at least", gap, got[k-1].at, a.at, flush)
			default:
				writes, n = writes+1, 1
			}
		}
		if most < 3 {
			t.Errorf("%d writes for %d words, at most %d in one: want them to share writes", writes, len(got), most)
		}
		if deltas > writes {
			t.Errorf("%d deltas in %d writes: want the words of a write joined into one delta", deltas, writes)
		}
	})
}

// TestFlushIntervalQuiet: a word that comes after a spell longer than the
// interval is written at once. (The first word follows the start of its
// message, written at once in the same instant: it waits for the interval.)
func TestFlushIntervalQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every, flush = 50 * time.Millisecond, 20 * time.Millisecond
		got, _ := pacedRun(t, flush, every, 6)
		for k, a := range got {
			e := emitted(k, every)
			switch {
			case k == 0 && (a.at < e || a.at > e+flush):
				t.Errorf("word 1 emitted at %v arrived at %v: want within %v", e, a.at, flush)
			case k > 0 && a.at != e:
				t.Errorf("word %d emitted at %v arrived at %v: want at once", k+1, e, a.at)
			}
		}
	})
}

// TestFlushIntervalOff: a negative FlushInterval writes every event as
// soon as the writer takes it.
func TestFlushIntervalOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 5 * time.Millisecond
		got, deltas := pacedRun(t, -1, every, 12)
		if deltas != len(got) {
			t.Errorf("%d deltas for %d words: want each written alone", deltas, len(got))
		}
		for k, a := range got {
			if e := emitted(k, every); a.at != e {
				t.Errorf("word %d emitted at %v arrived at %v: want at once", k+1, e, a.at)
			}
		}
	})
}

// TestWriteTimeoutBound: a client that stops reading is treated as gone
// (its run is cancelled) between WriteTimeout and 9/8 of it after the
// write that found it stalled: the deadline moves once per eighth of the
// timeout, not per write, and never leaves a write less than the timeout.
func TestWriteTimeoutBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wt, every = 8 * time.Second, 100 * time.Millisecond
		src := fmt.Sprintf("agents:\n  pacer:\n    model: {type: scripted, delay: %s, turns: [{text: %q}]}\n",
			every, strings.TrimSpace(strings.Repeat("word ", 400)))
		reg := hook.New(hook.Options{})
		ended := make(chan time.Time, 1)
		reg.OnSessionEnd.Register(func(_ context.Context, e hook.SessionEnd) error {
			ended <- time.Now()
			return nil
		})
		ln := serveBubble(t, New(servertest.PoolWith(t, src, pool.Options{Hooks: reg}), Options{WriteTimeout: wt}))
		c := ln.Dial()
		defer c.Close()
		httpsectest.Send(c, runRequest("/", runBody("t-stall", "go")))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("run: %v %v", res, err)
		}
		// Read for longer than an eighth of the timeout (the deadline
		// moves while the client reads), then stop.
		sc := bufio.NewScanner(res.Body)
		for deltas := 0; deltas < 20 && sc.Scan(); {
			if strings.Contains(sc.Text(), wire.TypeTextMessageContent) {
				deltas++
			}
		}
		stalled := time.Now()
		end := <-ended
		// The next word is written (and blocks) within every and the
		// flush interval of the stall.
		if d := end.Sub(stalled); d < wt || d > wt+wt/8+every+DefaultFlushInterval {
			t.Errorf("run ended %v after the client stalled, want between %v and %v", d, wt, wt+wt/8+every+DefaultFlushInterval)
		}
	})
}
