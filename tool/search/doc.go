// Package search is AgentPool's `search` toolset: web_search and
// news_search through a search provider the manifest names (Tavily or
// Brave), with the provider's API key read from the environment.
//
// Guarantees:
//   - Requests go through WebFetch's guarded transport
//     (webfetch.GuardedTransport): no proxy, and no connection to a
//     loopback, private or link-local address unless Options.Allow
//     allows it, so a provider URL cannot be pointed inside the network.
//   - Every request is bounded: a timeout (Options.Timeout), a response
//     body of at most maxBody bytes, at most maxResults results.
//   - A missing API key, a provider's HTTP error or a body that is not the
//     provider's documented JSON is a tool error saying which; the key is
//     never in a result.
package search
