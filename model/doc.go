// Package model defines the small streaming interface every language model
// provider implements, and the provider-neutral request and message types.
//
// A Model turns a Request into a pull iterator of Chunks: text deltas,
// thinking deltas, tool-call deltas (indexed, possibly several per turn),
// usage and a finish reason. Implementations must stop promptly when the
// context is cancelled or when the consumer stops iterating, must be safe
// for concurrent use by many sessions (no per-run state on the Model), and
// must never put API keys into errors.
package model
