package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentpool/agentpool/tool"
)

// ToolName is the agentpool name of an MCP server's tool:
// mcp__<server>__<tool>, Claude Code's convention (hook matchers such as
// `mcp__.*` or `mcp__git__.*` rely on it). Characters of the tool name
// outside [A-Za-z0-9_-] become '_', as model APIs accept no others.
func ToolName(server, mcpTool string) string {
	return "mcp__" + server + "__" + unsafeChars().ReplaceAllString(mcpTool, "_")
}

// Compiled on first use, not at package init, which every process
// linking the package pays (agentpool version too).
var unsafeChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]`) })

// emptySchema replaces a missing or unusable input schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// mcpTool is one MCP tool as a tool.Tool (and tool.Titler).
type mcpTool struct {
	s     *server
	name  string // the MCP tool name
	info  tool.Info
	title string
}

// wrap turns a tools/list result into tools. Names that collide after
// sanitising keep the first tool.
func (s *server) wrap(list []*sdk.Tool) []tool.Tool {
	out := make([]tool.Tool, 0, len(list))
	seen := map[string]bool{}
	for _, t := range list {
		name := ToolName(s.cfg.Name, t.Name)
		if seen[name] {
			s.log.Warn("mcp: two tools have the same name; keeping the first", "tool", t.Name, "name", name)
			continue
		}
		seen[name] = true
		kind := tool.KindOther
		title := t.Title
		if a := t.Annotations; a != nil {
			if a.ReadOnlyHint {
				kind = tool.KindRead
			}
			if title == "" {
				title = a.Title
			}
		}
		if title == "" {
			title = s.cfg.Name + ": " + t.Name
		}
		out = append(out, &mcpTool{
			s:     s,
			name:  t.Name,
			title: title,
			info: tool.Info{
				Name:        name,
				Description: t.Description,
				Parameters:  inputSchema(t.InputSchema),
				Kind:        kind,
			},
		})
	}
	return out
}

// inputSchema returns a tool's input schema as JSON, a missing (or
// non-object) one as {"type":"object","properties":{}}.
func inputSchema(v any) json.RawMessage {
	if v == nil {
		return emptySchema
	}
	b, err := json.Marshal(v)
	if err != nil {
		return emptySchema
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(b, &obj) != nil || obj == nil {
		return emptySchema
	}
	if _, ok := obj["type"]; !ok {
		obj["type"] = json.RawMessage(`"object"`)
		if _, ok := obj["properties"]; !ok {
			obj["properties"] = json.RawMessage(`{}`)
		}
		b, _ = json.Marshal(obj)
	}
	return b
}

func (t *mcpTool) Info() tool.Info { return t.info }

// Title implements tool.Titler: the tool's title or "server: tool".
func (t *mcpTool) Title(tool.Call) string { return t.title }

// Call implements tool.Tool. Server failures are error results, not
// errors; only the end of ctx is returned as an error.
func (t *mcpTool) Call(ctx context.Context, call tool.Call) (tool.Result, error) {
	return t.s.call(ctx, t.name, call.Args)
}

// call calls an MCP tool. A call that finds the server dead (EOF, exited,
// garbage on stdout, connection refused) restarts it and is retried once;
// calls failing on the same session share that restart.
func (s *server) call(ctx context.Context, name string, args json.RawMessage) (tool.Result, error) {
	meta := map[string]any{"mcp_server": s.cfg.Name, "mcp_tool": name}
	fail := func(format string, a ...any) (tool.Result, error) {
		r := tool.Errorf("mcp server %s: "+format, append([]any{s.cfg.Name}, a...)...)
		r.Metadata = meta
		return r, nil
	}
	var arguments any = map[string]any{}
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' || !json.Valid(trimmed) {
			return fail("tool %s: arguments must be a JSON object", name)
		}
		arguments = json.RawMessage(trimmed)
	}
	var lastErr error
	for attempt := range 2 {
		sess, err := s.ensure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return tool.Result{}, ctx.Err()
			}
			if attempt > 0 {
				return fail("tool %s: server failed (%v) and did not restart: %v", name, lastErr, err)
			}
			return fail("%v", err)
		}
		res, err := s.callOn(ctx, sess, name, arguments)
		if err == nil {
			out := convert(res)
			out.Metadata = meta
			if res.StructuredContent != nil {
				meta["mcp_structured_content"] = res.StructuredContent
			}
			return out, nil
		}
		var werr *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return tool.Result{}, ctx.Err()
		case s.m.ctx.Err() != nil:
			return fail("%v", errClosed)
		case sess.ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			return fail("tool %s timed out after %s", name, s.cfg.Timeout)
		case sess.ctx.Err() == nil && errors.As(err, &werr):
			// The server answered with an error (unknown tool, bad
			// arguments, a failing handler): it is alive.
			return fail("tool %s: %s", name, werr.Message)
		}
		// The session is broken (or another call found it broken).
		if why := sess.why(); why != nil && errors.Is(err, context.Canceled) {
			// Cut short by the end of its session (another call found
			// the garbage, or the exit): say why it ended.
			err = why
		}
		lastErr = sess.explain(err)
		s.drop(sess, err)
	}
	return fail("tool %s: server failed again after a restart: %v", name, lastErr)
}

// callOn makes one tools/call on sess within the per-call timeout; it
// ends early when the session is shut down.
func (s *server) callOn(ctx context.Context, sess *session, name string, args any) (*sdk.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	stop := context.AfterFunc(sess.ctx, cancel)
	defer stop()
	res, err := sess.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err == nil && res == nil {
		err = errors.New("empty tools/call result")
	}
	return res, err
}

// convert renders a tools/call result for the model: text contents as
// they are, other contents described on their own lines (joined with
// newlines), structured content as JSON when there is no text.
func convert(res *sdk.CallToolResult) tool.Result {
	var parts []string
	hasText := false
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			hasText = true
			parts = append(parts, tc.Text)
			continue
		}
		parts = append(parts, describe(c))
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append([]string{string(b)}, parts...)
		}
	}
	return tool.Result{Content: strings.Join(parts, "\n"), IsError: res.IsError}
}

// describe renders a non-text content block.
func describe(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *sdk.ResourceLink:
		s := "[resource link " + c.URI
		var attrs []string
		if c.Name != "" {
			attrs = append(attrs, c.Name)
		}
		if c.MIMEType != "" {
			attrs = append(attrs, c.MIMEType)
		}
		if c.Size != nil {
			attrs = append(attrs, fmt.Sprintf("%d bytes", *c.Size))
		}
		if len(attrs) > 0 {
			s += " (" + strings.Join(attrs, ", ") + ")"
		}
		s += "]"
		if c.Description != "" {
			s += " " + c.Description
		}
		return s
	case *sdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return "[resource]"
		}
		if r.Blob != nil {
			return fmt.Sprintf("[resource %s (%s), %d bytes]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
		}
		head := "[resource " + r.URI
		if r.MIMEType != "" {
			head += " (" + r.MIMEType + ")"
		}
		return head + "]\n" + r.Text
	default:
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Sprintf("[%T]", c)
		}
		return string(b)
	}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
