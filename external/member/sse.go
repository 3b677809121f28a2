package member

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
)

// ErrEventTooLarge is (wrapped in) the error Events yields for an event
// over its bound.
var ErrEventTooLarge = errors.New("server-sent event too large")

// Events yields the data of each server-sent event of r (its data lines
// joined by newlines; id:, event:, retry: and comments skipped), each at
// most max bytes: a longer event or line ends the sequence with an error
// that errors.Is ErrEventTooLarge. A read error ends it too. The data is
// valid until the next iteration.
func Events(r io.Reader, max int) iter.Seq2[[]byte, error] {
	tooLarge := fmt.Errorf("%w: over %d bytes", ErrEventTooLarge, max)
	return func(yield func([]byte, error) bool) {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, min(64<<10, max)), max)
		var data []byte
		has := false
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 {
				if has && !yield(data, nil) {
					return
				}
				data, has = data[:0], false
				continue
			}
			v, ok := bytes.CutPrefix(line, []byte("data:"))
			if !ok {
				continue
			}
			v = bytes.TrimPrefix(v, []byte(" "))
			if has {
				data = append(data, '\n')
			}
			if len(data)+len(v) > max {
				yield(nil, tooLarge)
				return
			}
			data, has = append(data, v...), true
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				err = tooLarge
			}
			yield(nil, err)
			return
		}
		if has {
			yield(data, nil)
		}
	}
}
