package memory

import (
	"slices"

	"github.com/agentpool/agentpool/session"
)

// threadOf is the thread a session names (session.MetaThread), "" when
// none: only a string value counts.
func threadOf(s *session.Session) string {
	th, _ := s.Metadata[session.MetaThread].(string)
	return th
}

// indexThread adds e under its thread, if it names one, so that
// ListOptions.Thread finds it without a look at every session. st.mu is
// held.
func (st *Store) indexThread(e *entry) {
	if th := threadOf(&e.s); th != "" {
		if st.threads == nil {
			st.threads = map[string][]*entry{}
		}
		st.threads[th] = append(st.threads[th], e)
	}
}

// unindexThread takes e out from under thread th. st.mu is held.
func (st *Store) unindexThread(e *entry, th string) {
	if th == "" {
		return
	}
	list := slices.DeleteFunc(st.threads[th], func(x *entry) bool { return x == e })
	if len(list) == 0 {
		delete(st.threads, th)
		return
	}
	st.threads[th] = list
}
