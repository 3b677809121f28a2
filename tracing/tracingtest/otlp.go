package tracingtest

import (
	"encoding/hex"
	"strconv"
	"strings"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// FromOTLP converts the spans of OTLP export requests.
func FromOTLP(reqs ...*collectortrace.ExportTraceServiceRequest) []*Span {
	var out []*Span
	for _, req := range reqs {
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					out = append(out, fromProto(s))
				}
			}
		}
	}
	return out
}

func fromProto(s *tracepb.Span) *Span {
	sp := &Span{
		name: s.GetName(), kind: protoKind(s.GetKind()),
		id: hex.EncodeToString(s.GetSpanId()), traceID: hex.EncodeToString(s.GetTraceId()),
		start: int64(s.GetStartTimeUnixNano()), attrs: map[string]string{},
	}
	if len(s.GetParentSpanId()) > 0 {
		sp.parent = hex.EncodeToString(s.GetParentSpanId())
	}
	if s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		sp.status = "error"
	}
	for _, kv := range s.GetAttributes() {
		sp.attrs[kv.GetKey()] = protoValue(kv.GetValue())
	}
	return sp
}

func protoKind(k tracepb.Span_SpanKind) string {
	return strings.ToLower(strings.TrimPrefix(k.String(), "SPAN_KIND_"))
}

// protoValue renders a value as attribute.Value.Emit does.
func protoValue(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, protoValue(e))
		}
		return strings.Join(parts, ",")
	}
	return ""
}
