package approval_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/agentpool/agentpool/approval"
)

// Sync returns once the notices of what happened before it were
// delivered: while a subscriber still takes the notice of an answer, Sync
// waits; once it returned, Sync returns. With nothing queued it returns
// at once.
func TestSyncWaitsForDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBroker(t, approval.Options{})
		b.Sync() // nothing queued
		release := make(chan struct{})
		asked := make(chan approval.Request, 1)
		delivered := make(chan struct{})
		defer b.Attach("test", func(n approval.Notice) {
			switch n.Kind {
			case approval.Asked:
				asked <- n.Request
			case approval.Replied:
				<-release
				close(delivered)
			}
		})()
		answered := make(chan approval.Answer, 1)
		go func() {
			a, _ := b.Ask(context.Background(), approval.Request{SessionID: "s", Agent: "a", Tool: "Write"})
			answered <- a
		}()
		req := <-asked
		go func() {
			_ = b.Reply(req.ID, approval.AllowOnce, "", "web") // delivers: blocks in the subscriber
		}()
		synctest.Wait() // the notice of the answer is in the subscriber
		synced := make(chan struct{})
		go func() {
			b.Sync()
			close(synced)
		}()
		synctest.Wait()
		select {
		case <-synced:
			t.Fatal("Sync returned while the answer's notice was being delivered")
		default:
		}
		close(release)
		<-synced
		select {
		case <-delivered:
		default:
			t.Error("Sync returned before the subscriber had the notice")
		}
		if a := <-answered; a.Reply != approval.AllowOnce {
			t.Errorf("answer %+v", a)
		}
	})
}
