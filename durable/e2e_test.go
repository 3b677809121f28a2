package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/event/eventtest"
	"github.com/agentpool/agentpool/model/openai"
	"github.com/agentpool/agentpool/pool"
	"github.com/agentpool/agentpool/session"
	"github.com/agentpool/agentpool/tool"
)

// The worker processes of the end-to-end tests are this test binary,
// started with envWorker set: TestMain runs a worker instead of the tests.
const (
	envWorker = "AGENTPOOL_DURABLE_TEST_WORKER" // JSON workerConfig
	testQueue = "agentpool-e2e"
)

type workerConfig struct {
	Address string `json:"address"`
	DB      string `json:"db"`
	BaseURL string `json:"base_url"`
	Key     string `json:"key"` // the worker's API key: the fake server tells workers apart by it
	// Members, when set, gives the pool the parallel team "crew" of that
	// many worker members (teamPool), and the worker the bare workflows
	// of the scale benchmark.
	Members int `json:"members,omitempty"`
	// Window is the engine's MaxInFlight (0: the default).
	Window int `json:"window,omitempty"`
	// ContinueAfter is the engine's ContinueAfterEvents (0: the default).
	ContinueAfter int `json:"continue_after,omitempty"`
	// HeartbeatEvery, when set, is the worker's HeartbeatEvery: longer
	// than the activities' heartbeat timeout, the server times them out.
	HeartbeatEvery time.Duration `json:"heartbeat_every,omitempty"`
	// HoldCreate, when set, is a URL the worker's activities GET before
	// they create the first child session (holdCreate).
	HoldCreate string `json:"hold_create,omitempty"`
	// KillAt, when set, kills the worker in the first workflow task of
	// that many history events or more whose Create stored members, once
	// it has (killInTask); what it created is written to KillFile.
	KillAt   int    `json:"kill_at,omitempty"`
	KillFile string `json:"kill_file,omitempty"`
	// CPUProfile, when set, is a file the worker writes its CPU profile
	// to, from its start to its SIGTERM.
	CPUProfile string `json:"cpu_profile,omitempty"`
}

// e2ePool: boss asks its worker, which answers slowly; both on the fake
// OpenAI-compatible server.
func e2ePool(baseURL, key string, st session.Store) (*pool.Pool, error) {
	return e2ePoolTraced(baseURL, key, st, nil)
}

// e2ePoolTraced is e2ePool traced by tp (nil: not traced); the boss also
// has the tools bossTools.
func e2ePoolTraced(baseURL, key string, st session.Store, tp trace.TracerProvider, bossTools ...tool.Tool) (*pool.Pool, error) {
	boss, err := openai.New(openai.Config{Model: "boss", BaseURL: baseURL, APIKey: key, MaxRetries: -1})
	if err != nil {
		return nil, err
	}
	wm, err := openai.New(openai.Config{Model: "worker", BaseURL: baseURL, APIKey: key, MaxRetries: -1})
	if err != nil {
		return nil, err
	}
	return pool.Build(pool.Config{
		Agents: []pool.AgentSpec{
			{Name: "boss", Model: boss, Tools: bossTools, Workers: []pool.WorkerSpec{{Name: "worker"}}},
			{Name: "worker", Model: wm},
		},
		Default: "boss",
	}, pool.Options{Store: st, TracerProvider: tp})
}

// runTestWorker is a worker process: it runs until SIGTERM.
func runTestWorker(raw string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker config:", err)
		return 2
	}
	st, err := openDB(cfg.DB)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker store:", err)
		return 2
	}
	defer st.Close()
	build := e2ePool
	if cfg.Members > 0 {
		build = func(u, k string, st session.Store) (*pool.Pool, error) { return teamPool(u, k, st, cfg.Members) }
	}
	p, err := build(cfg.BaseURL, cfg.Key, st)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker pool:", err)
		return 2
	}
	defer p.Close()
	c, err := client.Dial(client.Options{HostPort: cfg.Address, Logger: quietLogger{}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker dial:", err)
		return 2
	}
	defer c.Close()
	if cfg.HeartbeatEvery > 0 {
		HeartbeatEvery = cfg.HeartbeatEvery
	}
	opts := worker.Options{WorkerStopTimeout: 5 * time.Second}
	if cfg.KillAt > 0 {
		opts.Interceptors = []interceptor.WorkerInterceptor{&killInTask{at: cfg.KillAt, file: cfg.KillFile}}
	}
	w := worker.New(c, testQueue, opts)
	e := engineFor(p)
	if cfg.HoldCreate != "" {
		e.Store = &holdCreate{Store: e.Store, url: cfg.HoldCreate}
	}
	e.TaskQueue = testQueue
	e.MaxInFlight = cfg.Window
	e.ContinueAfterEvents = cfg.ContinueAfter
	e.Register(w)
	if cfg.Members > 0 {
		registerBare(w)
	}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker profile:", err)
			return 2
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	intr := make(chan any)
	go func() { <-stop; close(intr) }()
	if err := w.Run(intr); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// holdCreate is a store whose first creation of a child session waits for
// a GET of url to be answered: the test holds the Create local activity
// while it cancels the run.
type holdCreate struct {
	session.Store
	url  string
	once sync.Once
}

func (h *holdCreate) CreateSession(ctx context.Context, s session.Session) error {
	if s.ParentID != "" {
		h.once.Do(func() {
			if resp, err := http.Get(h.url); err == nil {
				resp.Body.Close()
			}
		})
	}
	// As a write already sent: its caller's cancel does not stop it.
	return h.Store.CreateSession(context.WithoutCancel(ctx), s)
}

// fakeAPI is an OpenAI-compatible server that logs every request and
// streams the worker's answer slowly.
type fakeAPI struct {
	*httptest.Server
	chunkDelay time.Duration
	fan        int  // ask_worker calls of the boss's first turn (1 when 0)
	echo       bool // the boss's first turn also calls the tool echo
	// async: the boss's first turn starts a background task (task with
	// async_mode) on the worker, its second says it waits, and the one
	// after the task's result answers.
	async     bool
	mu        sync.Mutex
	log       []call
	midStream chan string // the key of a worker-model request after its 3rd chunk (once)
	once      sync.Once
	// hold, when set, stops the worker model's stream after its 3rd
	// chunk until it is closed (or the request is cancelled), and answers
	// a GET of /hold (holdCreate) once it is closed, after a send on
	// held.
	hold chan struct{}
	held chan struct{}
}

type call struct {
	key, model, digest string
	completed          bool
	at                 time.Time
}

func newFakeAPI(t testing.TB, chunkDelay time.Duration) *fakeAPI {
	f := &fakeAPI{chunkDelay: chunkDelay, midStream: make(chan string, 1)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func chunk(delta, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"c","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}]}`
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hold" {
		f.held <- struct{}{}
		<-f.hold
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(raw, &body)
	sum := sha256.Sum256(raw)
	c := call{key: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), model: body.Model, digest: hex.EncodeToString(sum[:8]), at: time.Now()}
	f.mu.Lock()
	i := len(f.log)
	f.log = append(f.log, c)
	f.mu.Unlock()
	var frames []string
	var delay time.Duration
	switch {
	case strings.HasPrefix(body.Model, "worker"): // teamPool's members are worker-0, worker-1, ...
		for _, w := range []string{"The ", "answer ", "is ", "4", "2", "."} {
			frames = append(frames, chunk(fmt.Sprintf(`{"content":%q}`, w), ""))
		}
		frames = append(frames, chunk(`{}`, "stop"))
		delay = f.chunkDelay
	case f.async && body.Messages[len(body.Messages)-1].Role == "user" && strings.Contains(fmt.Sprint(body.Messages[len(body.Messages)-1].Content), "Background task"):
		frames = []string{chunk(`{"content":"The worker says: 42."}`, ""), chunk(`{}`, "stop")}
	case f.async && body.Messages[len(body.Messages)-1].Role == "tool":
		frames = []string{chunk(`{"content":"Waiting for the worker."}`, ""), chunk(`{}`, "stop")}
	case body.Messages[len(body.Messages)-1].Role == "tool":
		frames = []string{chunk(`{"content":"The worker says: 42."}`, ""), chunk(`{}`, "stop")}
	case f.async:
		frames = []string{
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_bg","type":"function","function":{"name":"task","arguments":"{\"agent_or_team\":\"worker\",\"prompt\":\"What is 6*7?\",\"async_mode\":true}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
		}
	default:
		for k := range max(f.fan, 1) {
			frames = append(frames, chunk(fmt.Sprintf(`{"role":"assistant","tool_calls":[{"index":%d,"id":"call_%d","type":"function","function":{"name":"ask_worker","arguments":"{\"prompt\":\"What is 6*7?\"}"}}]}`, k, k), ""))
		}
		if f.echo {
			k := max(f.fan, 1)
			frames = append(frames, chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":"call_echo","type":"function","function":{"name":"echo","arguments":"{}"}}]}`, k), ""))
		}
		frames = append(frames, chunk(`{}`, "tool_calls"))
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for k, fr := range append(frames, "[DONE]") {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(delay):
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", fr); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		if body.Model == "worker" && k == 2 {
			f.once.Do(func() { f.midStream <- c.key })
			if f.hold != nil {
				select {
				case <-f.hold:
				case <-r.Context().Done():
					return
				}
			}
		}
	}
	f.mu.Lock()
	f.log[i].completed = true
	f.mu.Unlock()
}

func (f *fakeAPI) calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.log...)
}

// workerProc is one worker process.
type workerProc struct {
	cmd    *exec.Cmd
	waited chan struct{} // closed once the process was waited for
}

func startWorker(t testing.TB, cfg workerConfig) *workerProc {
	t.Helper()
	raw, _ := json.Marshal(cfg)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorker+"="+string(raw))
	return startProc(t, cmd)
}

// startCLIWorker starts `agentpool worker` (the CLI) on a manifest of
// e2ePool's pool with cfg's server, key and store.
func startCLIWorker(t testing.TB, cli string, cfg workerConfig) *workerProc {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), "pool.yaml")
	model := func(name string) string {
		return fmt.Sprintf("{type: openai, model: %s, base_url: %q, api_key: %q}", name, cfg.BaseURL, cfg.Key)
	}
	yaml := fmt.Sprintf(`execution: {engine: temporal, address: %q, task_queue: %s}
default_agent: boss
agents:
  boss:
    model: %s
    workers: [worker]
  worker:
    model: %s
`, cfg.Address, testQueue, model("boss"), model("worker"))
	if err := os.WriteFile(manifest, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cli, "worker", "-c", manifest, "--db", cfg.DB)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	return startProc(t, cmd)
}

func startProc(t testing.TB, cmd *exec.Cmd) *workerProc {
	t.Helper()
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL} // no orphan if the test binary dies (a timeout panic skips cleanups)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &workerProc{cmd: cmd, waited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(w.waited) }()
	t.Cleanup(func() { w.stop(t) })
	return w
}

// stop ends the worker gracefully (SIGTERM), killing it after 15 s.
func (w *workerProc) stop(t testing.TB) {
	select {
	case <-w.waited:
		return
	default:
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.waited:
	case <-time.After(15 * time.Second):
		t.Errorf("worker %d did not stop on SIGTERM", w.cmd.Process.Pid)
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-w.waited
	}
}

func (w *workerProc) kill() {
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.waited
}

// A delegating run on three `agentpool worker` processes survives the
// SIGKILL of the worker that streams the child's answer: the run completes
// with the right answer, the root's live stream passes the invariants,
// every session ends once, and no model call that had completed is made
// again.
func TestKillWorkerMidChild(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits on timeouts
	addr := startDevServer(t)
	api := newFakeAPI(t, 400*time.Millisecond)
	db := testDB(t)
	st := openTestDB(t, db)
	cliBin := cliBinary(t)
	workers := map[string]*workerProc{}
	for i := range 3 {
		key := fmt.Sprintf("key-%d", i)
		workers[key] = startCLIWorker(t, cliBin, workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: key})
	}
	p, err := e2ePool(api.URL+"/v1", "key-client", st)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialTest(t, addr)

	if session.Notifier(st) != nil {
		// The follower reads on the store's notices alone: the checks
		// below that it streamed the child live prove they arrive.
		defer func(d time.Duration) { PollEvery = d }(PollEvery)
		PollEvery = time.Hour
	}
	collect, got := eventtest.Collect()
	// arrived: a token after each event the follower streamed, for
	// checkLive to look again at got rather than sleep.
	arrived := make(chan struct{}, 1)
	sink := event.SinkFunc(func(e event.Event) {
		collect.Emit(e)
		select {
		case arrived <- struct{}{}:
		default:
		}
	})
	killed := make(chan time.Time, 1)
	ran, stop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ran)
		var key string
		select {
		case key = <-api.midStream:
		case <-stop:
			return
		}
		at := time.Now()
		workers[key].kill()
		killed <- at
		// While the child's model call waits to be made again.
		checkLive(t, cliBin, db, st, got, arrived)
	}()
	node, _ := p.Node("boss")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "What is 6*7? Ask your worker.", TaskQueue: testQueue}, sink)
	close(stop)
	<-ran
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != event.StopCompleted || out.Output != "The worker says: 42." {
		t.Fatalf("end = %+v", out)
	}
	evs := got()
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Errorf("invariants: %v", err)
	}
	ends := map[string]int{}
	for _, e := range evs {
		if _, inner := event.Unwrap(root, e); inner != nil {
			if end, ok := inner.(event.SpawnSessionEnd); ok {
				ends[end.ChildSessionID]++
			}
		}
	}
	if len(ends) != 1 {
		t.Errorf("spawn_session_end per child = %v, want one child ended once", ends)
	}
	for child, n := range ends {
		if n != 1 {
			t.Errorf("child %s ended %d times", child, n)
		}
	}
	var killedAt time.Time
	select {
	case killedAt = <-killed:
	default:
		t.Fatal("no worker was killed")
	}
	seen := map[string]int{}
	cut, redone := false, false
	for _, c := range api.calls() {
		seen[c.digest]++
		cut = cut || (c.model == "worker" && !c.completed)
		redone = redone || (c.model == "worker" && c.completed && c.at.After(killedAt))
	}
	if !cut || !redone {
		t.Errorf("the child's model call was not cut by the kill and made again on another worker: %+v", api.calls())
	}
	for _, c := range api.calls() {
		if c.completed && c.at.Before(killedAt) && seen[c.digest] != 1 {
			t.Errorf("model call %s (%s) completed before the kill and was made %d times", c.digest, c.model, seen[c.digest])
		}
	}
	all, err := session.Subtree(ctx, st, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.Status != session.StatusCompleted {
			t.Errorf("session %s (%s) is %s", s.ID, s.AgentName, s.Status)
		}
	}
}

// Cancelling the root mid-child ends every session of the tree aborted,
// within seconds, and the stream still passes the invariants.
func TestCancelRootCancelsTree(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits on timeouts
	api := newFakeAPI(t, time.Second)
	st, _, p, c := startE2E(t, api, workerConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled := make(chan time.Time, 1)
	go func() {
		<-api.midStream
		cancelled <- time.Now()
		cancel()
	}()
	sink, got := eventtest.Collect()
	node, _ := p.Node("boss")
	root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "What is 6*7?", TaskQueue: testQueue}, sink)
	if err != nil {
		t.Fatal(err)
	}
	var at time.Time
	select {
	case at = <-cancelled:
	default:
		t.Fatal("the run was not cancelled")
	}
	if took := time.Since(at); took > 20*time.Second {
		t.Errorf("the tree took %s to end after the cancel", took)
	}
	if out.StopReason != event.StopAborted {
		t.Errorf("root ended %s, want aborted", out.StopReason)
	}
	if err := eventtest.CheckInvariants(root, got()); err != nil {
		t.Errorf("invariants: %v", err)
	}
	// The store holds the same: nothing of a session after its end. The
	// fake API's streams are over first (Close waits for them), so a model
	// turn cancelled with its session has ended and written what it had.
	api.Close()
	checkStoredTree(t, st, root)
	all, err := session.Subtree(context.Background(), st, root)
	if err != nil || len(all) != 2 {
		t.Fatalf("subtree: %d sessions, %v", len(all), err)
	}
	for _, s := range all {
		if s.Status != session.StatusAborted {
			t.Errorf("session %s (%s) is %s, want aborted", s.ID, s.AgentName, s.Status)
		}
	}
}

// Killing every worker mid-child and starting a new one lets the run
// finish.
func TestKillAllWorkersThenStartOne(t *testing.T) {
	t.Parallel() // its own dev server and store; mostly waits on timeouts
	addr := startDevServer(t)
	api := newFakeAPI(t, 400*time.Millisecond)
	db := testDB(t)
	st := openTestDB(t, db)
	var ws []*workerProc
	for i := range 2 {
		ws = append(ws, startWorker(t, workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: fmt.Sprintf("key-%d", i)}))
	}
	p, err := e2ePool(api.URL+"/v1", "key-client", st)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := dialTest(t, addr)
	restarted := make(chan struct{})
	go func() {
		defer close(restarted)
		<-api.midStream
		for _, w := range ws {
			w.kill()
		}
		startWorker(t, workerConfig{Address: addr, DB: db, BaseURL: api.URL + "/v1", Key: "key-new"})
	}()
	sink, got := eventtest.Collect()
	node, _ := p.Node("boss")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, out, err := RunRoot(ctx, c, st, RootRequest{Node: node, Prompt: "What is 6*7?", TaskQueue: testQueue}, sink)
	<-restarted
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != event.StopCompleted || out.Output != "The worker says: 42." {
		t.Fatalf("end = %+v", out)
	}
	if err := eventtest.CheckInvariants(root, got()); err != nil {
		t.Errorf("invariants: %v", err)
	}
}

// checkStoredTree checks the event invariants of the tree of root as the
// store holds it: nothing of a session after its end, among others.
func checkStoredTree(t *testing.T, st session.Store, root string) {
	t.Helper()
	stored, err := session.ReplayTree(context.Background(), st, root)
	if err != nil {
		t.Fatal(err)
	}
	evs := make([]event.Event, len(stored))
	for i, r := range stored {
		evs[i] = r.Event
	}
	if err := eventtest.CheckInvariants(root, evs); err != nil {
		t.Errorf("stored tree's invariants: %v", err)
	}
}

// startE2E starts a dev server and one worker process on it, whose model
// is api (cfg's address, database, base URL and key are set here), and
// returns the store they share, the worker, a client pool on that store
// (closed at the test's end) and a Temporal client.
func startE2E(t *testing.T, api *fakeAPI, cfg workerConfig) (session.Store, *workerProc, *pool.Pool, client.Client) {
	t.Helper()
	addr := startDevServer(t)
	db := testDB(t)
	st := openTestDB(t, db)
	cfg.Address, cfg.DB, cfg.BaseURL, cfg.Key = addr, db, api.URL+"/v1", "key-0"
	w := startWorker(t, cfg)
	p, err := e2ePool(api.URL+"/v1", "key-client", st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return st, w, p, dialTest(t, addr)
}
