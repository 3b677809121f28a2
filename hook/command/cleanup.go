package command

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/agentpool/agentpool/session"
)

// CleanTranscripts returns st with deletion extended to transcripts: when a
// session is deleted (with its subtree), so are the transcripts of those
// sessions under dir (a root's file and its subagents' directory, or a
// child's files). When owned, dir is the store's own (a temporary
// directory for an in-memory store) and closing the store removes it.
//
// Sessions a store drops on its own (the in-memory store's bound on root
// sessions) keep their transcripts until dir is removed.
func CleanTranscripts(st session.Store, dir string, owned bool) session.Store {
	return &transcriptStore{Store: st, dir: dir, owned: owned}
}

type transcriptStore struct {
	session.Store
	dir   string
	owned bool
}

// Unwrap returns the store CleanTranscripts wrapped.
func (s *transcriptStore) Unwrap() session.Store { return s.Store }

func (s *transcriptStore) DeleteSession(ctx context.Context, id string) error {
	// What to remove is known only before the sessions are gone.
	tree, terr := session.Subtree(ctx, s.Store, id)
	root := id
	if terr == nil {
		root = rootOf(ctx, s.Store, tree[0])
	}
	if err := s.Store.DeleteSession(ctx, id); err != nil {
		return err
	}
	if terr != nil {
		return nil
	}
	ids := make([]string, len(tree))
	for i, t := range tree {
		ids[i] = t.ID
	}
	return RemoveTranscripts(s.dir, root, ids...)
}

func (s *transcriptStore) Close() error {
	err := s.Store.Close()
	if s.owned && s.dir != "" {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// rootOf walks up from s to its root session.
func rootOf(ctx context.Context, st session.Store, s session.Session) string {
	for i := 0; s.ParentID != "" && i < 1000; i++ {
		p, err := st.GetSession(ctx, s.ParentID)
		if err != nil {
			break
		}
		s = p
	}
	return s.ID
}

// RemoveTranscripts removes the transcripts under dir of sessions ids,
// whose root session is root: for the root, its file and the directory of
// its subagents' files.
func RemoveTranscripts(dir, root string, ids ...string) error {
	if dir == "" || !safeID(root) {
		return nil
	}
	var errs []error
	rm := func(p string, all bool) {
		var err error
		if all {
			err = os.RemoveAll(p)
		} else {
			err = os.Remove(p)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, id := range ids {
		if !safeID(id) {
			continue
		}
		if id == root {
			rm(TranscriptPath(dir, root, root), false)
			rm(filepath.Join(dir, root), true)
			continue
		}
		rm(TranscriptPath(dir, root, id), false)
	}
	return errors.Join(errs...)
}
