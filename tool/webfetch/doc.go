// Package webfetch is the fetch toolset: the WebFetch tool (Claude Code's
// name and input fields, url and prompt), built by New(Options).
//
// WebFetch{url, prompt?} makes one HTTP GET and returns the response as
// text for the model.
//
// Guarantees:
//
//   - Only http and https URLs are fetched, other schemes are refused, and
//     so are redirects to them; at most 5 redirects are followed.
//   - Only public addresses are connected to, unless Options.Allow (the
//     fetch toolset's allowed_hosts) allows more. Refused: loopback
//     (127.0.0.0/8, ::1), private (10.0.0.0/8, 172.16.0.0/12,
//     192.168.0.0/16, fc00::/7), link-local (169.254.0.0/16, fe80::/10,
//     cloud metadata services included), multicast, unspecified
//     (0.0.0.0/8, ::), broadcast, site-local (fec0::/10) and shared
//     carrier-grade NAT addresses (100.64.0.0/10: often a VPN's or a
//     provider's internal network), also written as IPv4-mapped IPv6
//     addresses. The check is the dialer's Control function, run on the
//     address about to be connected to: every address a name resolves to
//     and every redirect is judged, and nothing is connected between a
//     check and its use. No proxy is used, not even one from the
//     environment (HTTP_PROXY, HTTPS_PROXY) or the client's Transport: a
//     proxy would connect where the dialer cannot see. A refusal is an
//     error result that names the URL, the address and its kind, and says
//     to use allowed_hosts. An allowed host name lets through whatever it
//     resolves to (it does not allow its address when written as such);
//     an allowed address or CIDR network lets through those addresses
//     whatever name leads to them. Limits: addresses that embed an IPv4
//     address other than IPv4-mapped ones (NAT64 64:ff9b::/96, 6to4) are
//     judged as IPv6 addresses, so a NAT64 gateway may still reach a
//     private IPv4 network on its side.
//   - A fetch takes at most Options.Timeout (default 30 s), body included;
//     past it the result is an error saying so. At most Options.MaxBytes of
//     the body are read (default 5 MiB); the result says when it was cut.
//   - HTML (text/html, application/xhtml+xml) is turned into readable text
//     with golang.org/x/net/html: scripts, styles, the head, navigation,
//     form controls and hidden elements are dropped; headings become
//     "# " lines, list items "- " or "1. " lines, table cells are joined by
//     " | ", links read "text (absolute url)"; whitespace is collapsed and
//     blocks are separated by blank lines. text/*, JSON and XML (and
//     octet-stream that is UTF-8 text) are returned as they are. Any other
//     content (images, PDFs, archives) is described by its type and size,
//     never dumped. Latin-1 bodies are converted; other charsets are read
//     as UTF-8.
//   - The text is cut at 100,000 characters, and the result says how many
//     more there were.
//   - An HTTP error status (4xx, 5xx) is an error result (IsError) that
//     begins "HTTP error 404 Not Found fetching <url>", followed by the
//     same header and at most 2,000 characters of the body. A failed
//     request (refused connection, timeout, too many redirects) is an
//     error result too.
//   - Metadata: url (final), status, content_type, bytes (read),
//     truncated, duration_ms.
//
// The result starts with header lines, then a blank line, then the
// content:
//
//	Question: <prompt>                  (when a prompt is given)
//	(Answer it from the content below.)
//
//	URL: <final URL, after redirects>
//	Requested URL: <url>                (when redirected)
//	Status: 200 OK
//	Content-Type: text/html; charset=utf-8
//	Title: <the HTML title>             (for HTML with one)
//	Note: ...                           (body or text cut)
//
//	<content>
//
// Claude Code runs a small model over the page with prompt and returns its
// answer. This runtime has no such model at hand: prompt is repeated at the
// top of the result ("Question: ...") and the calling model answers it
// from the content itself.
//
// The tool's kind is fetch; its title is "Fetch <url>" ("Fetch URL" with
// no url). It is safe for concurrent use.
package webfetch
