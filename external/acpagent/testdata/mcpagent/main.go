// Command mcpagent is a test ACP agent that calls the MCP tools its
// client serves: each line of a prompt is a command, answered in the
// agent's message (one line per command):
//
//	call TOOL JSON    announce a tool call (title mcp__agentpool__TOOL),
//	                  call TOOL on the MCP server "agentpool", report its result
//	detach TOOL JSON  call TOOL in the background and end the turn at once
//	list              the tools the server "agentpool" lists
//	servers           the names of the MCP servers of session/new
//	post N            POST N bytes to the server's URL: the HTTP status
//	old               POST tools/list to the first URL this process was
//	                  ever given (an ended delegation's): the HTTP status
//
// With MCPAGENT_NO_HTTP set it offers no MCP over HTTP (initialize); a
// stdio server named "agentpool" in session/new (a relay) is then what
// it starts and calls.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"

	acp "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type agent struct {
	conn *acp.AgentSideConnection

	mu       sync.Mutex
	sessions map[acp.SessionId]*session
	first    string // the first served URL
	calls    int
}

type session struct {
	servers []acp.McpServer
	url     string
	stdio   *acp.McpServerStdio // the server "agentpool" over stdio
	cancel  context.CancelFunc
}

func main() {
	a := &agent{sessions: map[acp.SessionId]*session{}}
	// The SDK reads stdin from the moment the connection is made and runs
	// each request in a goroutine of its own: a prompt could run before
	// a.conn is set and find it nil. Nothing is read before it is set.
	gate := make(chan struct{})
	a.conn = acp.NewAgentSideConnection(a, os.Stdout, gatedReader{os.Stdin, gate})
	close(gate)
	<-a.conn.Done()
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

func (a *agent) Initialize(context.Context, acp.InitializeRequest) (acp.InitializeResponse, error) {
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{McpCapabilities: acp.McpCapabilities{Http: os.Getenv("MCPAGENT_NO_HTTP") == ""}},
	}, nil
}

func (a *agent) NewSession(_ context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := acp.SessionId(fmt.Sprintf("s%d", len(a.sessions)+1))
	s := &session{servers: req.McpServers}
	for _, m := range req.McpServers {
		if m.Stdio != nil && m.Stdio.Name == "agentpool" {
			s.stdio = m.Stdio
		}
		if m.Http != nil && m.Http.Name == "agentpool" {
			s.url = m.Http.Url
			if a.first == "" {
				a.first = s.url
			}
		}
	}
	a.sessions[id] = s
	return acp.NewSessionResponse{SessionId: id}, nil
}

func (a *agent) Cancel(_ context.Context, n acp.CancelNotification) error {
	a.mu.Lock()
	s := a.sessions[n.SessionId]
	a.mu.Unlock()
	if s != nil && s.cancel != nil {
		s.cancel()
	}
	return nil
}

func (a *agent) Prompt(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	a.mu.Lock()
	s := a.sessions[req.SessionId]
	a.mu.Unlock()
	if s == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams("unknown session")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	s.cancel = cancel
	a.mu.Unlock()
	var text strings.Builder
	for _, b := range req.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	var out []string
	for line := range strings.SplitSeq(text.String(), "\n") {
		cmd, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch cmd {
		case "call", "detach":
			name, args, _ := strings.Cut(rest, " ")
			if cmd == "detach" {
				go a.callTool(context.WithoutCancel(ctx), s, name, args)
				out = append(out, "detached "+name)
				continue
			}
			out = append(out, name+": "+a.announced(ctx, req.SessionId, s, name, args))
		case "list":
			out = append(out, a.list(ctx, s))
		case "servers":
			var names []string
			for _, m := range s.servers {
				switch {
				case m.Http != nil:
					names = append(names, m.Http.Name)
				case m.Sse != nil:
					names = append(names, m.Sse.Name)
				case m.Stdio != nil:
					names = append(names, m.Stdio.Name)
				}
			}
			out = append(out, "servers: "+strings.Join(names, ","))
		case "post":
			var n int
			fmt.Sscan(rest, &n)
			out = append(out, post(s.url, bytes.Repeat([]byte(" "), n)))
		case "old":
			a.mu.Lock()
			u := a.first
			a.mu.Unlock()
			out = append(out, post(u, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)))
		}
		if ctx.Err() != nil {
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		}
	}
	a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: req.SessionId, Update: acp.UpdateAgentMessageText(strings.Join(out, "\n"))})
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// announced calls a tool as an agent does: announced, called, reported.
func (a *agent) announced(ctx context.Context, sid acp.SessionId, s *session, name, args string) string {
	a.mu.Lock()
	a.calls++
	id := acp.ToolCallId(fmt.Sprintf("tc_%d", a.calls))
	a.mu.Unlock()
	var in any
	json.Unmarshal([]byte(args), &in)
	a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.StartToolCall(id, "mcp__agentpool__"+name,
		acp.WithStartKind(acp.ToolKindOther), acp.WithStartStatus(acp.ToolCallStatusPending), acp.WithStartRawInput(in))})
	res, failed := a.callTool(ctx, s, name, args)
	status := acp.ToolCallStatusCompleted
	if failed {
		status = acp.ToolCallStatusFailed
	}
	a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: sid, Update: acp.UpdateToolCall(id, acp.WithUpdateStatus(status),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(res))}))})
	return res
}

func (a *agent) connect(ctx context.Context, s *session) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpagent", Version: "1"}, nil)
	if s.url == "" && s.stdio != nil {
		// As an agent starts a stdio MCP server: its command, with the
		// env of session/new added to the agent's own.
		cmd := exec.Command(s.stdio.Command, s.stdio.Args...)
		cmd.Env = os.Environ()
		for _, e := range s.stdio.Env {
			cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
		}
		cmd.Stderr = os.Stderr
		return c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	}
	if s.url == "" {
		return nil, fmt.Errorf("no server agentpool in session/new")
	}
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}, nil)
}

func (a *agent) callTool(ctx context.Context, s *session, name, args string) (string, bool) {
	cs, err := a.connect(ctx, s)
	if err != nil {
		return "error: " + err.Error(), true
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		return "error: " + err.Error(), true
	}
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String(), res.IsError
}

func (a *agent) list(ctx context.Context, s *session) string {
	cs, err := a.connect(ctx, s)
	if err != nil {
		return "error: " + err.Error()
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	return "tools: " + strings.Join(names, ",")
}

// post sends body to url as an MCP request and returns the HTTP status.
func post(url string, body []byte) string {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "error: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "error: " + err.Error()
	}
	resp.Body.Close()
	return fmt.Sprintf("status %d", resp.StatusCode)
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, nil
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, nil
}
