// Package web is agentpool's web view: a page that shows the session tree
// of a pool live, the transcript of any session, a timeline of a run's
// sessions with a span per model and tool call, search and filter of
// the tree, the files each session changed, a rewind of any message
// (POST /session/{id}/revert?mode=), a prompt box and stop button, a cancel button on every running
// session's row (POST /session/{id}/abort: a child alone, its parent goes
// on; docs/control.md), and the tool calls waiting for
// approval, with their answers. It is served by the OpenCode server
// (server/opencode, Options.UI) beside the OpenCode API, which is the
// page's only data source (`agentpool serve web`, which also gives that
// server the approval broker, Options.Approvals).
//
// The page is plain HTML, CSS and JavaScript modules written by hand and
// embedded in the binary (go:embed): it loads nothing from the network
// and the Go build needs no front-end toolchain.
//
// Guarantees of the handler (UI):
//
//   - It answers GET and HEAD of "/" (the page) and of its own asset
//     paths under /ui/ only (Serves); every other request, unknown /ui/
//     paths included, stays the API's, with its 404.
//   - Every answer carries a Content-Security-Policy that allows only the
//     server's own scripts, styles, images and connections (no inline
//     script, no framing), X-Content-Type-Options: nosniff, no referrer,
//     and the exact content type of the file.
//   - The page and assets hold no data, so the OpenCode server answers
//     them without the bearer token; the page asks for the token when the
//     API answers 401 and sends it (Authorization: Bearer) on every call,
//     the event stream included (read with fetch, as EventSource cannot
//     send headers). It keeps the token in the tab's sessionStorage only.
//
// Guarantees of the page's approvals (docs/approvals.md):
//
//   - It shows every pending request: those listed by GET /permission on
//     each connection of the event stream and those announced by
//     permission.asked after it. A request is filed under the session
//     where the tool runs (metadata.sessionID, which the server sets on a
//     grandchild's request published on an ancestor), whose tree row is
//     marked waiting until the request is settled.
//   - The card shows the request's agent, tool, title and input as text
//     (the file and diff of an edit, the command of a bash call, else
//     JSON); nothing from the request is parsed as HTML.
//   - Its answers go to POST /permission/{id}/reply (once, always, reject
//     with an optional message); permission.replied settles the card and
//     the mark wherever the answer came from, and an answer the server
//     refuses is shown on the card with its reason.
package web
