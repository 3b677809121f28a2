package spawn

import "sync"

// runScope holds what the nodes of one root run keep for the run's
// length (RunScoped): one value per key, and the functions that end them.
type runScope struct {
	mu     sync.Mutex
	values map[any]any
	ends   []func()
	closed bool
}

// RunScoped returns the value kept under key for the root run that inv
// belongs to (the root and every session spawned in it share it), making
// it with make the first time. The end function make returns (nil:
// none) runs once the root run has ended, after every session of the run
// ended, in the reverse order of making: a node keeps so a resource that
// its runs in one root run share (an external agent's process) and that
// must not outlive the run.
//
// make runs outside the run's lock, so it may block; when two sessions
// make a value for the same key at once, the first stored wins and the
// other's end function runs at once. After the run has ended a value is
// still made, returned and ended at once, as it is for an invocation
// that belongs to no run. Nothing ends the values of a durable engine's
// invocations (NewEnvInvocation): a node that needs its values ended
// must not run under an Env.
func (inv *Invocation) RunScoped(key any, make func() (value any, end func())) any {
	if inv.run == nil {
		v, end := make()
		if end != nil {
			end()
		}
		return v
	}
	s := &inv.run.scope
	s.mu.Lock()
	if v, ok := s.values[key]; ok {
		s.mu.Unlock()
		return v
	}
	s.mu.Unlock()
	v, end := make()
	s.mu.Lock()
	if old, ok := s.values[key]; ok {
		s.mu.Unlock()
		if end != nil {
			end()
		}
		return old
	}
	if s.closed {
		s.mu.Unlock()
		if end != nil {
			end()
		}
		return v
	}
	if s.values == nil {
		s.values = map[any]any{}
	}
	s.values[key] = v
	if end != nil {
		s.ends = append(s.ends, end)
	}
	s.mu.Unlock()
	return v
}

// end ends what the run's nodes kept (RunScoped), latest first.
func (s *runScope) end() {
	s.mu.Lock()
	ends := s.ends
	s.ends, s.values, s.closed = nil, nil, true
	s.mu.Unlock()
	for i := len(ends) - 1; i >= 0; i-- {
		ends[i]()
	}
}
