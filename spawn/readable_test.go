package spawn

import "testing"

func TestReadableResult(t *testing.T) {
	for _, c := range []struct {
		in, text, sid, stop string
		ok                  bool
	}{
		{`{"output":"The answer.","session_id":"ses_1"}`, "The answer.", "ses_1", "", true},
		{`{"error":"context canceled","output":"","session_id":"ses_2","stop_reason":"aborted"}`, "Cancelled by the user.", "ses_2", "aborted", true},
		{`{"error":"agent b: context canceled","output":"half","session_id":"ses_3","stop_reason":"error"}`, "half\n\nFailed: cancelled by the user", "ses_3", "error", true},
		{`{"error":"model: 500 upstream","output":"","session_id":"ses_4","stop_reason":"error"}`, "Failed: model: 500 upstream", "ses_4", "error", true},
		{`{"error":"model test: the provider refused: quota exhausted","output":"","session_id":"ses_8","stop_reason":"error"}`, "Failed: the provider refused: quota exhausted (model test)", "ses_8", "error", true},
		{`{"session_id":"ses_5","task_id":"task_1"}`, "Running in the background as task task_1.", "ses_5", "", true},
		{`{"output":"done","session_id":"ses_6","status":"completed","task_id":"task_1"}`, "done", "ses_6", "completed", true},
		{`{"cancelled_by":"acp","error":"session ses_7 was cancelled by the user (from acp)","output":"","session_id":"ses_7","stop_reason":"aborted"}`, "Cancelled by the user (from acp).", "ses_7", "aborted", true},
		{`{"output":"x"}`, `{"output":"x"}`, "", "", false},
		{"plain text", "plain text", "", "", false},
	} {
		text, sid, stop, ok := ReadableResult(c.in)
		if text != c.text || sid != c.sid || stop != c.stop || ok != c.ok {
			t.Errorf("ReadableResult(%s) = %q %q %q %v, want %q %q %q %v", c.in, text, sid, stop, ok, c.text, c.sid, c.stop, c.ok)
		}
	}
}
