package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// fakeLoadParams tell fakeLoad how to behave: Fail makes its Round return
// an error, Exit makes its Round end the process with that status.
type fakeLoadParams struct {
	Fail string `json:"fail,omitempty"`
	Exit int    `json:"exit,omitempty"`
}

// fakeLoad records, per round, its round number as one latency and as
// its events; it reports its process (pid) as its first latency so that
// the test sees where it ran.
type fakeLoad struct {
	p     fakeLoadParams
	setup int
	round int
	lats  []int64
}

func newFakeLoad(raw json.RawMessage) (LoadClient, error) {
	var p fakeLoadParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return &fakeLoad{p: p, lats: []int64{int64(os.Getpid())}}, nil
}

func (f *fakeLoad) Setup() error { f.setup++; return nil }

func (f *fakeLoad) Round() (int, error) {
	if f.p.Exit != 0 {
		fmt.Fprintln(os.Stderr, "fake client exits")
		os.Exit(f.p.Exit)
	}
	if f.p.Fail != "" {
		return 0, errors.New(f.p.Fail)
	}
	if f.setup <= f.round {
		return 0, errors.New("round without setup")
	}
	f.round++
	f.lats = append(f.lats, int64(f.round))
	return f.round, nil
}

func (f *fakeLoad) TakeLatencies() []int64 { l := f.lats; f.lats = nil; return l }
func (f *fakeLoad) Close() error           { return nil }

// TestLoadClientProcess is the fake client's process (StartLoad).
func TestLoadClientProcess(t *testing.T) {
	ok, err := ServeLoad(newFakeLoad)
	if !ok {
		t.Skip("run by the tests of StartLoad")
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestLoadRounds(t *testing.T) {
	for _, mode := range []string{"inprocess", "subprocess"} {
		t.Run(mode, func(t *testing.T) {
			t.Setenv(LoadClientEnv, mode)
			l, err := StartLoad("TestLoadClientProcess", fakeLoadParams{}, newFakeLoad)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Kill()
			if l.InProcess() != (mode == "inprocess") {
				t.Fatalf("InProcess() = %v in mode %s", l.InProcess(), mode)
			}
			// The first latency is the client's pid: this process's
			// in process, another's otherwise.
			lat, err := l.Latencies()
			if err != nil || lat.N != 1 {
				t.Fatalf("Latencies() = %+v, %v; want the pid alone", lat, err)
			}
			if self := lat.P50 == int64(os.Getpid()); self != l.InProcess() {
				t.Fatalf("client pid %d, this process %d, in process: %v", lat.P50, os.Getpid(), l.InProcess())
			}
			for i := 1; i <= 3; i++ {
				if err := l.Setup(); err != nil {
					t.Fatal(err)
				}
				r, err := l.Round()
				if err != nil || r.Events != i {
					t.Fatalf("round %d: %+v, %v", i, r, err)
				}
				if i == 1 {
					if err := l.Discard(); err != nil {
						t.Fatal(err)
					}
				}
			}
			lat, err = l.Latencies()
			if want := (Latencies{N: 2, P50: 2, P99: 2}); err != nil || lat != want {
				t.Fatalf("Latencies() = %+v, %v; want %+v", lat, err, want)
			}
			if _, err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLoadClientFails(t *testing.T) {
	t.Setenv(LoadClientEnv, "subprocess")
	l, err := StartLoad("TestLoadClientProcess", fakeLoadParams{Fail: "no server"}, newFakeLoad)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Kill()
	if _, err := l.Round(); err == nil || !strings.Contains(err.Error(), "no server") {
		t.Fatalf("Round() = %v, want the client's error", err)
	}
	// The client answered; it still ends cleanly when closed.
	if _, err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadClientDies(t *testing.T) {
	t.Setenv(LoadClientEnv, "subprocess")
	l, err := StartLoad("TestLoadClientProcess", fakeLoadParams{Exit: 3}, newFakeLoad)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Kill()
	_, err = l.Round()
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "fake client exits") {
		t.Fatalf("Round() = %v, want the exit status and the client's stderr", err)
	}
	if _, err := l.Close(); err == nil {
		t.Fatal("Close() after the client died: no error")
	}
}

func TestLoadClientMode(t *testing.T) {
	t.Setenv(LoadClientEnv, "elsewhere")
	if _, err := StartLoad("TestLoadClientProcess", fakeLoadParams{}, newFakeLoad); err == nil {
		t.Fatal("StartLoad with an unknown mode: no error")
	}
}
