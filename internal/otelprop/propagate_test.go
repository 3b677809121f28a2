package otelprop

import (
	"net/http"
	"testing"
)

// A W3C traceparent gives the caller's span context, from a header or from
// strings; none or a malformed one gives an invalid one.
func TestFromTraceparent(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h := http.Header{}
	h.Set("Traceparent", tp)
	for name, sc := range map[string]interface{ IsValid() bool }{
		"header":  FromHeader(h),
		"strings": FromTraceparent(tp, "k=v"),
	} {
		if !sc.IsValid() {
			t.Errorf("%s: not valid", name)
		}
	}
	if sc := FromHeader(h); sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !sc.IsRemote() {
		t.Errorf("trace id %s, remote %v", sc.TraceID(), sc.IsRemote())
	}
	if FromHeader(http.Header{}).IsValid() || FromTraceparent("", "").IsValid() || FromTraceparent("00-bad", "").IsValid() {
		t.Error("a missing or malformed traceparent gave a valid span context")
	}
}
