package testmodel_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentpool/agentpool/model"
	"github.com/agentpool/agentpool/model/testmodel"
)

// PreStreamDelay (AgentPool's pre_stream_delay) pauses once before a
// response's first chunk, not between its chunks; a cancelled context ends
// the pause.
func TestPreStreamDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, err := testmodel.New(testmodel.Config{Text: "one two three", PreStreamDelay: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var first, last time.Duration
		n := 0
		for _, err := range m.Stream(t.Context(), &model.Request{Messages: []model.Message{model.UserText("hi")}}) {
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				first = time.Since(start)
			}
			last = time.Since(start)
			n++
		}
		if first != 2*time.Second || last != 2*time.Second || n < 3 {
			t.Errorf("first chunk after %v, last after %v (%d chunks); want both after 2s", first, last, n)
		}

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		var got error
		for _, err := range m.Stream(ctx, &model.Request{Messages: []model.Message{model.UserText("hi")}}) {
			got = err
			break
		}
		if got == nil || time.Since(start) != time.Second {
			t.Errorf("cancelled after %v: err %v", time.Since(start), got)
		}
	})
}
