package opencode

import (
	"context"
	"crypto/sha256"
	"unicode/utf8"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/server/opencode/internal/wire"
	"github.com/agentpool/agentpool/session"
)

// Prompt text on the shelf. The transcripts in memory would otherwise keep
// every prompt's text for as long as its session is cached (up to
// MaxSessions sessions, each with all its prompts): 80 sessions with a
// 7 MiB prompt held 560 MB after their runs had ended. So once the store
// holds a prompt (its run has ended, or a noReply prompt was stored), a
// user part whose text is over maxKeptText bytes is kept cut, with where
// the store has it whole; GET .../message reads it back from there.

// maxKeptText is the longest user text a transcript keeps whole in memory.
const maxKeptText = 64 << 10

// shelvedCut is how much of a shelved text the transcript keeps, for a
// reader the store cannot serve (the text then ends with "...").
const shelvedCut = 200

// shelved says where the store has a shelved part's text whole: bytes
// [off, off+n) of a stored user text part of size bytes whose SHA-256 is
// sum (the whole prompt as its run stored it).
type shelved struct {
	size   int
	sum    [sha256.Size]byte
	off, n int
}

// cutText is the copy of a shelved text the part keeps: its first
// shelvedCut bytes (whole characters), then "...".
func cutText(s string) string {
	n := shelvedCut
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..." // a new string: the long one is let go
}

// shelveLocked puts m's long user texts on the shelf. whole is the stored
// user text that holds them all, each at its offset in at (by part id),
// and sum its sumOf. A part whose text is not there is kept whole. The
// session's lock is held.
func (t *transcript) shelveLocked(m *tmsg, whole string, sum [sha256.Size]byte, at map[string]int) {
	for _, p := range m.parts {
		text, ok := partText(p.value())
		off := at[p.id]
		// (Comparing a substring of whole with whole's own bytes is a
		// pointer check.)
		if ok && len(text) > maxKeptText && p.shelf == nil && off+len(text) <= len(whole) && whole[off:off+len(text)] == text {
			t.shelvePart(p, &shelved{size: len(whole), sum: sum, off: off, n: len(text)})
		}
	}
}

// shelveStored puts the long user texts of a transcript just built from
// the store on the shelf, each part being a stored text. It hashes them:
// call it before the transcript is shared (no lock held).
func (t *transcript) shelveStored() {
	for _, m := range t.msgs {
		if m.user == nil {
			continue
		}
		for _, p := range m.parts {
			if text, ok := partText(p.value()); ok && len(text) > maxKeptText && p.shelf == nil {
				t.shelvePart(p, &shelved{size: len(text), sum: sumOf(text), n: len(text)})
			}
		}
	}
}

// shelvePart keeps p's text cut, the store having it where sh says.
func (t *transcript) shelvePart(p *tpart, sh *shelved) {
	v := p.value()
	text, _ := partText(v)
	p.shelf = sh
	p.set(withPartText(v, cutText(text)))
	t.shelved++
}

// partText is the text of a user part that may be shelved.
func partText(v any) (string, bool) {
	switch v := v.(type) {
	case *wire.TextPart:
		return v.Text, true
	case *wire.SubtaskPart:
		return v.Prompt, true
	}
	return "", false
}

// withPartText is a copy of the part v with text as its text.
func withPartText(v any, text string) any {
	switch v := v.(type) {
	case *wire.TextPart:
		c := *v
		c.Text = text
		return &c
	case *wire.SubtaskPart:
		c := *v
		c.Prompt = text
		return &c
	}
	return v
}

// shelvedLocked returns the shelved parts of msgs, nil when none. The
// session's lock is held.
func (t *transcript) shelvedLocked(msgs []*tmsg) map[*tpart]*shelved {
	if t.shelved == 0 {
		return nil
	}
	var out map[*tpart]*shelved
	for _, m := range msgs {
		for _, p := range m.parts {
			if p.shelf != nil {
				if out == nil {
					out = map[*tpart]*shelved{}
				}
				out[p] = p.shelf
			}
		}
	}
	return out
}

// unshelve reads the shelved texts back from the stored user texts of
// session sid: the text of each part found, by part.
func unshelve(ctx context.Context, st session.Store, sid string, want map[*tpart]*shelved) map[*tpart]string {
	sizes := map[int]bool{}
	for _, sh := range want {
		sizes[sh.size] = true
	}
	msgs, err := st.Messages(ctx, sid)
	if err != nil {
		return nil
	}
	out := map[*tpart]string{}
	for _, m := range msgs {
		if m.Role != model.RoleUser {
			continue
		}
		for _, mp := range m.Parts {
			if mp.Kind != model.PartText || !sizes[len(mp.Text)] {
				continue
			}
			sum := sumOf(mp.Text)
			for p, sh := range want {
				if sh.size == len(mp.Text) && sh.sum == sum {
					out[p] = mp.Text[sh.off : sh.off+sh.n]
				}
			}
		}
	}
	return out
}

// sumOf is the SHA-256 of s, without a copy of s (a prompt may be
// megabytes long).
func sumOf(s string) [sha256.Size]byte {
	h := sha256.New()
	var buf [32 << 10]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
