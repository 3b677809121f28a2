package floors

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentpool/agentpool/"

// ceiling is the most packages (itself and every dependency, standard
// library included: `go list -deps PKG | wc -l`) a core package may build.
const ceiling = 150

// core are the packages a library user starts from.
var core = []string{"pool", "agent", "spawn", "session", "hook", "event", "tool", "config"}

// denied are import path prefixes no core package may depend on: network
// clients of model providers, fetch and MCP, the OpenTelemetry SDK and
// exporters, gRPC and protobuf, Temporal, the SQL drivers, the old schema
// reflector.
var denied = []string{
	module + "model/openai", module + "model/anthropic",
	module + "tool/webfetch", module + "tool/mcp",
	module + "batteries", module + "tracing/otelwire",
	"github.com/openai/", "github.com/anthropics/",
	"github.com/modelcontextprotocol/", "github.com/coder/acp-go-sdk", module + "external/",
	"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters", "go.opentelemetry.io/contrib",
	"google.golang.org/grpc", "google.golang.org/protobuf",
	"go.temporal.io/",
	"modernc.org/", "github.com/jackc/",
	"github.com/invopop/",
}

// pkg is one package as go list reports it.
type pkg struct {
	path    string
	deps    []string          // every dependency, transitively
	imports map[string]string // dependency -> a package of the build that imports it
}

// list runs go list on the packages (relative to the module root) and
// returns each with its dependencies and, for every dependency, one of
// the packages in the build that imports it (to say why it is there).
func list(t *testing.T, rel ...string) map[string]*pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to list dependencies: %v", err)
	}
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}\t{{join .Deps \" \"}}\t{{join .Imports \" \"}}"}
	for _, r := range rel {
		args = append(args, module+r)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	all := map[string]*pkg{}
	importer := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		all[f[0]] = &pkg{path: f[0], deps: strings.Fields(f[1])}
		for _, imp := range strings.Fields(f[2]) {
			if _, ok := importer[imp]; !ok {
				importer[imp] = f[0]
			}
		}
	}
	out2 := map[string]*pkg{}
	for _, r := range rel {
		p, ok := all[module+r]
		if !ok {
			t.Fatalf("go list did not report %s", module+r)
		}
		p.imports = importer
		out2[r] = p
	}
	return out2
}

// chain says why p depends on dep: the importers from dep back up to p.
func (p *pkg) chain(dep string) string {
	path := []string{dep}
	for cur := dep; cur != p.path && len(path) < 20; {
		cur = p.imports[cur]
		if cur == "" {
			break
		}
		path = append(path, cur)
	}
	slices.Reverse(path)
	return strings.Join(path, " -> ")
}

// forbidden returns p's dependencies that match prefixes, each with the
// chain of imports that brought it in.
func (p *pkg) forbidden(prefixes []string) []string {
	var bad []string
	for _, d := range p.deps {
		for _, pre := range prefixes {
			if strings.HasPrefix(d, pre) {
				bad = append(bad, p.chain(d))
				break
			}
		}
	}
	return bad
}

// TestDependencyFloors: each core package builds at most ceiling packages
// and none of the denied ones. The counts are logged (go test -v) for
// BENCHMARKS.md.
func TestDependencyFloors(t *testing.T) {
	pkgs := list(t, core...)
	for _, name := range core {
		p := pkgs[name]
		n := len(p.deps) + 1 // itself, as `go list -deps | wc -l` counts
		t.Logf("%-8s %d packages", name, n)
		if n > ceiling {
			t.Errorf("%s builds %d packages, more than %d", name, n, ceiling)
		}
		for _, b := range p.forbidden(denied) {
			t.Errorf("%s depends on a package the core must not: %s", name, b)
		}
	}
}

// TestConfigWithoutNetHTTP: reading a manifest needs no HTTP stack (the
// allowed_hosts check is internal/hostallow, not the fetch tool).
func TestConfigWithoutNetHTTP(t *testing.T) {
	p := list(t, "config")["config"]
	for _, b := range p.forbidden([]string{"net/http", "crypto/tls"}) {
		t.Errorf("config depends on %s", b)
	}
}

// TestObserverWithoutExporters: the pool's tracing needs only the
// OpenTelemetry API; the SDK and exporters are tracing/otelwire's, which
// only the command imports.
func TestObserverWithoutExporters(t *testing.T) {
	p := list(t, "tracing")["tracing"]
	for _, b := range p.forbidden([]string{"go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters",
		"go.opentelemetry.io/contrib", "google.golang.org/", "net/http", module + "tracing/otelwire"}) {
		t.Errorf("tracing depends on %s", b)
	}
	if !slices.Contains(p.deps, "go.opentelemetry.io/otel/trace") {
		t.Errorf("tracing does not use the OpenTelemetry trace API: is this test still looking at the observer?")
	}
}

// TestPoolWithoutProviders: the pool builds no model provider, fetch or
// MCP client and no HTTP stack; package batteries wires them in.
func TestPoolWithoutProviders(t *testing.T) {
	p := list(t, "pool")["pool"]
	for _, b := range p.forbidden([]string{module + "model/openai", module + "model/anthropic",
		module + "tool/webfetch", module + "tool/mcp", module + "batteries", "net/http"}) {
		t.Errorf("pool depends on %s", b)
	}
	if b := list(t, "batteries")["batteries"]; !slices.Contains(b.deps, module+"model/openai") || !slices.Contains(b.deps, module+"tool/mcp") {
		t.Errorf("batteries no longer wires in openai and MCP: is this test still looking at the right packages?")
	}
}
