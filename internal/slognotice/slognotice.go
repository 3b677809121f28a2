// Package slognotice turns a log record into a notice a test can wait on:
// a slog.Handler that signals a channel each time a record with a given
// message is handled. Tests use it to wait for what the code under test
// logs (a connection back, a server's list changed) instead of sleeping.
//
// The handler never blocks the logger: when the channel is full the notice
// is dropped, since one pending notice says as much as several.
package slognotice

import (
	"context"
	"log/slog"
)

// Handler signals ch for each record whose message is msg; it accepts
// every level and drops every other record.
type Handler struct {
	msg string
	ch  chan<- struct{}
}

// New returns a Handler for msg that signals ch (buffered, so that a
// notice can wait for its reader).
func New(msg string, ch chan<- struct{}) Handler { return Handler{msg: msg, ch: ch} }

func (h Handler) Enabled(context.Context, slog.Level) bool { return true }
func (h Handler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h Handler) WithGroup(string) slog.Handler            { return h }

// Handle signals the channel when r is the awaited record.
func (h Handler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
