// Package event defines every event kind of the agentpool wire contract
// (docs/spec/EVENTS.md §2) as a Go type, and their JSON codec.
//
// Every event is a plain value: no channels, readers or pointers to live
// runtime state. The Event interface is sealed (only this package's types
// implement it). Encoding writes the exact snake_case field names plus the
// "event_kind" discriminator and omits empty optional fields; Decode turns
// such an object back into the right type. Golden files under testdata/
// pin the wire format.
//
// Sinks: a Sink receives events. The runtime calls Emit from several
// goroutines at once (parallel tools, team members); a Sink must be safe for
// that, and it may block to apply back-pressure. Events handed to a Sink are
// copies as far as the runtime is concerned: the runtime never reads an
// event back after emitting it. Consumers must treat an event's slices and
// maps as read-only: they may be shared with other events of the stream
// (every wrapper of one child carries the same Path slice, for example).
package event
