package mcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentpool/agentpool/tool"
)

// newManager makes a Manager that is closed when the test ends.
func newManager(t *testing.T, servers ...ServerConfig) *Manager {
	t.Helper()
	m, err := NewManager(servers, Options{StartTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func toolset(t *testing.T, m *Manager, name string) tool.Toolset {
	t.Helper()
	ts, ok := m.Toolset(name)
	if !ok {
		t.Fatalf("no toolset %q", name)
	}
	return ts
}

func listAll(t *testing.T, ts tool.Toolset) []tool.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools, err := ts.Tools(ctx)
	if err != nil {
		t.Fatalf("Tools: %v", err)
	}
	return tools
}

func toolNames(tools []tool.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Info().Name)
	}
	slices.Sort(names)
	return names
}

func findTool(t *testing.T, ts tool.Toolset, name string) tool.Tool {
	t.Helper()
	for _, tl := range listAll(t, ts) {
		if tl.Info().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// call calls a tool of ts by its agentpool name; args is a JSON object
// or a value to marshal.
func call(t *testing.T, ts tool.Toolset, name string, args any) tool.Result {
	t.Helper()
	tl := findTool(t, ts, name)
	raw, ok := args.(string)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		raw = string(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := tl.Call(ctx, tool.Call{ID: "c1", Name: name, Args: json.RawMessage(raw)})
	if err != nil {
		t.Fatalf("Call %s: %v", name, err)
	}
	return res
}

func wantOK(t *testing.T, res tool.Result, contains string) {
	t.Helper()
	if res.IsError || !strings.Contains(res.Content, contains) {
		t.Fatalf("result = %+v, want success containing %q", res, contains)
	}
}

func wantError(t *testing.T, res tool.Result, contains ...string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("result = %+v, want an error", res)
	}
	for _, c := range contains {
		if !strings.Contains(res.Content, c) {
			t.Fatalf("error result %q does not contain %q", res.Content, c)
		}
	}
}

func status(m *Manager, name string) ServerStatus {
	for _, s := range m.Servers() {
		if s.Name == name {
			return s
		}
	}
	return ServerStatus{}
}
