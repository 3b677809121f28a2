// Package id generates the OpenCode-compatible identifiers used for
// sessions, messages, parts, tool calls, events and async tasks.
//
// An id is PREFIX + "_" + 26 characters: 14 hex digits of
// (unix_ms*0x1000 + counter) truncated to 7 bytes, then 12 base62 characters
// from a ChaCha8 stream seeded from crypto/rand. Ascending ids sort by
// creation time; descending ids (the time part bitwise NOT-ed) sort newest
// first.
//
// Guarantees: a Generator is safe for concurrent use, and the time parts it
// hands out are strictly monotonic for the life of the process, even when
// the wall clock steps back (it keeps counting from the last value). Ids are
// opaque to consumers: nothing should parse meaning out of them.
package id
