package webfetch

import "net/http"

// GuardedTransport returns a copy of base (nil: http.DefaultTransport)
// whose dialer refuses addresses that are not public unless allow allows
// them, and which uses no proxy: WebFetch's guard, for other tools that
// reach the web (tool/search). base must be nil or an *http.Transport.
func GuardedTransport(base http.RoundTripper, allow AllowList) (*http.Transport, error) {
	return guardedTransport(base, allow)
}
