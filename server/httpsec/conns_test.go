package httpsec_test

import (
	"errors"
	"net"
	"testing"
	"testing/synctest"

	"github.com/agentpool/agentpool/server/httpsec"
	"github.com/agentpool/agentpool/server/httpsec/httpsectest"
)

// TestLimitListener: a connection past the limit is accepted only when
// one closes (its slot is given back once, however often it is closed),
// and Close ends an Accept that waits for a slot.
func TestLimitListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pipes := httpsectest.NewListener()
		ln := httpsec.LimitListener(pipes, 1)
		accepted := make(chan net.Conn, 2)
		failed := make(chan error, 1)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					failed <- err
					return
				}
				accepted <- c
			}
		}()
		first := pipes.Dial()
		defer first.Close()
		server := <-accepted
		second := make(chan net.Conn, 1)
		go func() { second <- pipes.Dial() }()
		synctest.Wait()
		if len(accepted) != 0 || len(second) != 0 {
			t.Fatal("a second connection was accepted past the limit of 1")
		}
		server.Close()
		server.Close() // gives back no second slot, and does not block
		c := <-second
		defer c.Close()
		synctest.Wait()
		if len(accepted) != 1 {
			t.Fatalf("%d connections accepted after one closed, want 1", len(accepted))
		}
		defer (<-accepted).Close()
		// Close ends the Accept waiting for a slot.
		ln.Close()
		if err := <-failed; !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v", err)
		}
	})
}
