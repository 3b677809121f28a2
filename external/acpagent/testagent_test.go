package acpagent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentpool/agentpool/external/acpagent"
)

// The test agent is this test binary started again with testAgentEnv
// set (TestMain runs it instead of the tests): an ACP agent built on the
// SDK's agent side whose prompts are instructions, so that a test makes
// it call what it checks. Its answer is a JSON testReply.
//
//	run REQUEST     terminal/create (REQUEST: a CreateTerminalRequest's
//	                JSON, without sessionId), wait_for_exit,
//	                terminal/output, terminal/release
//	kill REQUEST    terminal/create, terminal/kill, wait_for_exit,
//	                terminal/output, terminal/release
//	track REQUEST   run, the terminal shown by a tool call
//	                (trackCallID) announced after terminal/create and
//	                completed after terminal/release
//	start FIFO REQUEST
//	                terminal/create, then one line read from the named
//	                pipe FIFO (the command writes it), and the turn ends
//	                with the terminal neither released nor waited for
//	hang            a message chunk ("hanging PID"), then no answer
//	                ever: session/cancel, SIGTERM and the end of stdin
//	                are ignored too
//	linger          answered, but the process ignores SIGTERM and the
//	                end of its stdin: it does not exit
//	read PATH       fs/read_text_file of PATH: the text in Output
//	rewrite PATH TEXT
//	                fs/read_text_file of PATH, then fs/write_text_file
//	                of TEXT to it
//	usage           a usage_update with a cost of 0.25 USD, then one of
//	                0.5 USD (cumulative), and usage in the answer (120
//	                in, 30 out, 10 cache read, 5 thought tokens)
//	anything else   answered with what the agent saw
//
// With testStateEnv naming a directory, the agent advertises loadSession
// and keeps each session's prompts in a file there; session/load replays
// them (as session/update notifications, as the protocol says) and the
// next prompt's reply lists them (History).
const (
	testAgentEnv = "ACPAGENT_TEST_AGENT"
	testStateEnv = "ACPAGENT_TEST_STATE"
)

// testReply is the test agent's answer.
type testReply struct {
	Prompt   string   `json:"prompt"`
	Pid      int      `json:"pid"`                 // the agent's process
	Terminal bool     `json:"terminal_capability"` // what initialize offered
	FsRead   bool     `json:"fs_read_capability"`
	FsWrite  bool     `json:"fs_write_capability"`
	Loaded   bool     `json:"loaded,omitempty"`  // the session was loaded
	History  []string `json:"history,omitempty"` // its earlier prompts
	ID       string   `json:"id,omitempty"`      // the terminal's
	Output   string   `json:"output,omitempty"`
	Cut      bool     `json:"truncated,omitempty"`
	Code     *int     `json:"exit_code,omitempty"`
	Signal   *string  `json:"signal,omitempty"`
	Line     string   `json:"line,omitempty"` // read from the FIFO
	Error    string   `json:"error,omitempty"`
}

// testAgentNode is a member that runs the test agent in a temporary
// directory (cfg's Name, Dir, Env and the rest kept when set).
func testAgentNode(t *testing.T, cfg acpagent.Config) *acpagent.Node {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Command = exe
	env := map[string]string{testAgentEnv: "1"}
	for k, v := range cfg.Env {
		env[k] = v
	}
	cfg.Env = env
	if cfg.Name == "" {
		cfg.Name = "tester"
	}
	return newNode(t, cfg)
}

// runTestAgent serves ACP on stdio until stdin ends.
func runTestAgent() int {
	a := &testAgent{state: os.Getenv(testStateEnv), loaded: map[string]bool{}, hung: make(chan struct{})}
	// The SDK reads stdin from the moment the connection is made and runs
	// each request in a goroutine of its own: a prompt that calls the
	// client back (terminal/create, ...) could run before a.conn is set
	// and find it nil. Nothing is read before it is set.
	gate := make(chan struct{})
	a.conn = acp.NewAgentSideConnection(a, os.Stdout, gatedReader{os.Stdin, gate})
	close(gate)
	<-a.conn.Done()
	select {
	case <-a.hung:
		hang()
	default:
	}
	return 0
}

// gatedReader reads r once gate is closed.
type gatedReader struct {
	r    io.Reader
	gate <-chan struct{}
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

// hang runs until the process is killed, ignoring SIGTERM: a hung agent.
func hang() {
	signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	for {
		time.Sleep(time.Hour)
	}
}

type testAgent struct {
	conn  *acp.AgentSideConnection
	state string

	hung chan struct{} // closed by a prompt that hangs

	mu       sync.Mutex
	terminal bool
	fs       acp.FileSystemCapabilities
	next     int
	loaded   map[string]bool
}

var _ acp.AgentLoader = (*testAgent)(nil)

func (a *testAgent) Initialize(_ context.Context, req acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.terminal = req.ClientCapabilities.Terminal
	a.fs = req.ClientCapabilities.Fs
	a.mu.Unlock()
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AgentCapabilities: acp.AgentCapabilities{LoadSession: a.state != ""}}, nil
}

func (a *testAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.mu.Lock()
	a.next++
	sid := fmt.Sprintf("test-%d-%d", os.Getpid(), a.next)
	a.mu.Unlock()
	return acp.NewSessionResponse{SessionId: acp.SessionId(sid)}, nil
}

func (a *testAgent) LoadSession(ctx context.Context, req acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	prompts, err := a.history(string(req.SessionId))
	if err != nil {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown session " + string(req.SessionId)})
	}
	for _, p := range prompts {
		for _, u := range []acp.SessionUpdate{acp.UpdateUserMessageText(p), acp.UpdateAgentMessageText("replayed: " + p)} {
			if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: req.SessionId, Update: u}); err != nil {
				return acp.LoadSessionResponse{}, err
			}
		}
	}
	a.mu.Lock()
	a.loaded[string(req.SessionId)] = true
	a.mu.Unlock()
	return acp.LoadSessionResponse{}, nil
}

// history is a session's prompts kept in the state directory.
func (a *testAgent) history(sid string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(a.state, sid))
	if err != nil {
		return nil, err
	}
	var prompts []string
	err = json.Unmarshal(b, &prompts)
	return prompts, err
}

func (a *testAgent) Prompt(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	var text strings.Builder
	for _, b := range req.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	prompt := text.String()
	a.mu.Lock()
	r := testReply{Prompt: prompt, Pid: os.Getpid(), Terminal: a.terminal, FsRead: a.fs.ReadTextFile, FsWrite: a.fs.WriteTextFile, Loaded: a.loaded[string(req.SessionId)]}
	a.mu.Unlock()
	if a.state != "" {
		prompts, _ := a.history(string(req.SessionId))
		r.History = prompts
		b, _ := json.Marshal(append(prompts, prompt))
		if err := os.WriteFile(filepath.Join(a.state, string(req.SessionId)), b, 0o644); err != nil {
			return acp.PromptResponse{}, err
		}
	}
	verb, rest, _ := strings.Cut(prompt, " ")
	switch verb {
	case "hang":
		// It ignores session/cancel, SIGTERM and the end of its stdin.
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		close(a.hung)
		_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: req.SessionId, Update: acp.UpdateAgentMessageText(fmt.Sprintf("hanging %d", os.Getpid()))})
		hang()
	case "linger":
		// It answers, then ignores SIGTERM and the end of its stdin.
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		close(a.hung)
	case "run", "kill", "track":
		a.runTerminal(ctx, req.SessionId, verb, rest, &r)
	case "start":
		fifo, spec, _ := strings.Cut(rest, " ")
		a.startTerminal(ctx, req.SessionId, fifo, spec, &r)
	case "read":
		res, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: req.SessionId, Path: rest})
		r.Output = res.Content
		if err != nil {
			r.Error = "read: " + errText(err)
		}
	case "rewrite":
		path, text, _ := strings.Cut(rest, " ")
		if _, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: req.SessionId, Path: path}); err != nil {
			r.Error = "read: " + errText(err)
		} else if _, err := a.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: req.SessionId, Path: path, Content: text}); err != nil {
			r.Error = "write: " + errText(err)
		}
	}
	var usage *acp.Usage
	if verb == "usage" {
		for _, amount := range []float64{0.25, 0.5} {
			u := acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Cost: &acp.Cost{Amount: amount, Currency: "USD"}, Used: 150, Size: 200000}}
			if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: req.SessionId, Update: u}); err != nil {
				return acp.PromptResponse{}, err
			}
		}
		cached, thought := 10, 5
		usage = &acp.Usage{InputTokens: 120, OutputTokens: 30, CachedReadTokens: &cached, ThoughtTokens: &thought, TotalTokens: 165}
	}
	b, _ := json.Marshal(r)
	if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: req.SessionId, Update: acp.UpdateAgentMessageText(string(b))}); err != nil {
		return acp.PromptResponse{}, err
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: usage}, nil
}

// create sends terminal/create with the request spec.
func (a *testAgent) create(ctx context.Context, sid acp.SessionId, spec string, r *testReply) bool {
	var req acp.CreateTerminalRequest
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		r.Error = "bad request: " + err.Error()
		return false
	}
	req.SessionId = sid
	res, err := a.conn.CreateTerminal(ctx, req)
	if err != nil {
		r.Error = "create: " + errText(err)
		return false
	}
	r.ID = res.TerminalId
	return true
}

// trackCallID is the tool call that shows the terminal of "track".
const trackCallID = "call_terminal"

func (a *testAgent) runTerminal(ctx context.Context, sid acp.SessionId, verb string, spec string, r *testReply) {
	if !a.create(ctx, sid, spec, r) {
		return
	}
	if verb == "track" {
		shown := acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: trackCallID, Title: "a command", Kind: acp.ToolKindExecute,
			Status: acp.ToolCallStatusInProgress, Content: []acp.ToolCallContent{{Terminal: &acp.ToolCallContentTerminal{TerminalId: r.ID, Type: "terminal"}}}}}
		if err := a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: shown}); err != nil {
			r.Error = "tool_call: " + errText(err)
			return
		}
		defer func() {
			done := acp.ToolCallStatusCompleted
			_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: trackCallID, Status: &done}}})
		}()
	}
	if verb == "kill" {
		if _, err := a.conn.KillTerminal(ctx, acp.KillTerminalRequest{SessionId: sid, TerminalId: r.ID}); err != nil {
			r.Error = "kill: " + errText(err)
			return
		}
	}
	st, err := a.conn.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{SessionId: sid, TerminalId: r.ID})
	if err != nil {
		r.Error = "wait: " + errText(err)
		return
	}
	out, err := a.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: r.ID})
	if err != nil {
		r.Error = "output: " + errText(err)
		return
	}
	r.Output, r.Cut, r.Code, r.Signal = out.Output, out.Truncated, st.ExitCode, st.Signal
	if out.ExitStatus == nil {
		r.Error = "output: no exit status after wait_for_exit"
		return
	}
	if _, err := a.conn.ReleaseTerminal(ctx, acp.ReleaseTerminalRequest{SessionId: sid, TerminalId: r.ID}); err != nil {
		r.Error = "release: " + errText(err)
		return
	}
	if _, err := a.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: r.ID}); err == nil {
		r.Error = "output after release: no error"
	}
}

func (a *testAgent) startTerminal(ctx context.Context, sid acp.SessionId, fifo, spec string, r *testReply) {
	if !a.create(ctx, sid, spec, r) {
		return
	}
	f, err := os.Open(fifo) // blocks until the command opens it to write
	if err != nil {
		r.Error = "fifo: " + err.Error()
		return
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		r.Error = "fifo: " + err.Error()
	}
	r.Line = strings.TrimSpace(line)
}

func errText(err error) string {
	var re *acp.RequestError
	if errors.As(err, &re) {
		if re.Data != nil {
			return fmt.Sprintf("%s: %v", re.Message, re.Data)
		}
		return re.Message
	}
	return err.Error()
}

func (a *testAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *testAgent) Cancel(context.Context, acp.CancelNotification) error { return nil }

func (a *testAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

func (a *testAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *testAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *testAgent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

func (a *testAgent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}
