// The HTTP client of the sse and streamable-http transports: configured
// headers on every request, and a bound on what one response may make the
// SDK read into memory.

package mcp

import (
	"fmt"
	"io"
	"mime"
	"net/http"
)

// maxResponseBody bounds an HTTP response body that is not an event
// stream: one JSON-RPC message, or an error page. The SDK reads such a body
// whole before it decodes it, so a server answering garbage without end
// would take the memory of the process, and every other server's calls
// with it. 16 MiB is the SDK's own bound on one stdio line and on one
// server-sent event.
const maxResponseBody = 16 << 20

// errBodyTooLarge ends the read of a body past maxResponseBody; the SDK
// then fails the connection, and the call's error result says why.
var errBodyTooLarge = fmt.Errorf("HTTP response body larger than %d bytes (the bound on one JSON-RPC message); not read further", maxResponseBody)

func (s *server) httpClient() *http.Client {
	return &http.Client{Transport: clientTransport{base: s.httpTransport, headers: s.cfg.Headers}}
}

// clientTransport adds the configured headers to every request and bounds
// every response body but an event stream's (whose events the SDK bounds
// one by one).
type clientTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (c clientTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(c.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body = &boundedBody{rc: resp.Body, left: maxResponseBody}
	}
	return resp, nil
}

// boundedBody reads at most left bytes of a body; one more is
// errBodyTooLarge. Closing it unread drops the connection, so the server
// is not read any further.
type boundedBody struct {
	rc   io.ReadCloser
	left int64 // bytes still allowed; -1 once the bound was passed
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte past the bound tells it was passed
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n, b.left = int(b.left), -1
		return n, errBodyTooLarge
	}
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
