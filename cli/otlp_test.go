package cli

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/agentpool/agentpool/tracing/tracingtest"
)

// otlpReceiver is an OTLP/HTTP receiver on loopback: it decodes the
// protobuf export requests of traces and metrics and keeps them.
type otlpReceiver struct {
	mu      sync.Mutex
	traces  []*collectortrace.ExportTraceServiceRequest
	metrics []*collectormetrics.ExportMetricsServiceRequest
	bad     []string
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		r.bad = append(r.bad, req.URL.Path+": "+req.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var resp proto.Message
	switch req.URL.Path {
	case "/v1/traces":
		m := &collectortrace.ExportTraceServiceRequest{}
		err, resp = proto.Unmarshal(data, m), &collectortrace.ExportTraceServiceResponse{}
		r.traces = append(r.traces, m)
	case "/v1/metrics":
		m := &collectormetrics.ExportMetricsServiceRequest{}
		err, resp = proto.Unmarshal(data, m), &collectormetrics.ExportMetricsServiceResponse{}
		r.metrics = append(r.metrics, m)
	default:
		r.bad = append(r.bad, "path "+req.URL.Path)
		http.NotFound(w, req)
		return
	}
	if err != nil {
		r.bad = append(r.bad, req.URL.Path+": "+err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// TestRunExportsOTLP runs the nested example with the CLI exporting over
// OTLP/HTTP to a receiver on loopback, and checks that the decoded spans
// make the tree of the in-memory golden test (tracing), under
// the service name of OTEL_SERVICE_NAME, and that the metrics came too.
func TestRunExportsOTLP(t *testing.T) {
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_METRICS_EXPORTER", "otlp")
	t.Setenv("OTEL_SERVICE_NAME", "agentpool-e2e")
	t.Setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "")
	manifest, err := filepath.Abs(filepath.Join("..", "examples", "nested.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	res := runCLI(t, t.TempDir(), "run", "-c", manifest, "--db", ":memory:", "--output", "jsonl", "Write a note about nested teams")
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Fatalf("bad exports: %v", rcv.bad)
	}
	got, err := tracingtest.Render(tracingtest.FromOTLP(rcv.traces...))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "tracing", "testdata", "nested.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the exported span tree differs from tracing/testdata/nested.golden:\n%s", got)
	}
	var service string
	for _, req := range rcv.traces {
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					service = kv.GetValue().GetStringValue()
				}
			}
		}
	}
	if service != "agentpool-e2e" {
		t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's", service)
	}
	var names []string
	for _, req := range rcv.metrics {
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					names = append(names, m.GetName())
				}
			}
		}
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"gen_ai.client.operation.duration", "gen_ai.client.token.usage", "agentpool.sessions.started", "agentpool.sessions.ended", "agentpool.tool.duration"} {
		if !strings.Contains(all, want) {
			t.Errorf("metric %s not exported (got %s)", want, all)
		}
	}
}
