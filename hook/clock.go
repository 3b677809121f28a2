package hook

import (
	"sync"
	"time"
)

type callKey struct{ session, call string }

// callClock notes when each allowed tool call started, so that PostTool
// can say how long it ran. The zero value is ready.
type callClock struct {
	mu      sync.Mutex
	started map[callKey]time.Time
}

func (c *callClock) start(k callKey) {
	c.mu.Lock()
	if c.started == nil {
		c.started = map[callKey]time.Time{}
	}
	c.started[k] = time.Now()
	c.mu.Unlock()
}

// end forgets the call and returns how long it ran (false when it was
// never started: denied, or run outside the registry).
func (c *callClock) end(k callKey) (time.Duration, bool) {
	c.mu.Lock()
	at, ok := c.started[k]
	delete(c.started, k)
	c.mu.Unlock()
	if !ok {
		return 0, false
	}
	return time.Since(at), true
}
