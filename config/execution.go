// The manifest's `execution:` block: which engine runs the pool's sessions.

package config

import (
	"net"
	"strings"
)

// Engines of `execution.engine`.
const (
	EngineInProcess = "in_process" // the default: every session in this process
	EngineTemporal  = "temporal"   // sessions are Temporal workflows (package durable)
)

// Defaults of a temporal execution block.
const (
	DefaultTemporalNamespace = "default"
	DefaultTemporalTaskQueue = "agentpool"
)

// EnvTemporalAddress overrides `execution.address`.
const EnvTemporalAddress = "AGENTPOOL_TEMPORAL_ADDRESS"

var executionKeys = []string{"engine", "address", "namespace", "task_queue"}

// Execution is `execution:`. The zero value is the in-process engine.
type Execution struct {
	Engine    string // EngineTemporal, or EngineInProcess (also when empty)
	Address   string // HOST:PORT of the Temporal frontend
	Namespace string // DefaultTemporalNamespace when unset
	TaskQueue string // DefaultTemporalTaskQueue when unset
	Line      int    // of the block, for later errors
}

// Temporal reports whether the sessions run on Temporal.
func (e Execution) Temporal() bool { return e.Engine == EngineTemporal }

// ResolvedAddress is the frontend's address: getenv(EnvTemporalAddress)
// when set, else Address.
func (e Execution) ResolvedAddress(getenv func(string) string) string {
	if a := strings.TrimSpace(getenv(EnvTemporalAddress)); a != "" {
		return a
	}
	return e.Address
}

// execution reads `execution:`.
func (p *parser) execution(e entry) Execution {
	x := Execution{Line: e.line()}
	f, ok := p.object(e.val, "execution", executionKeys)
	if !ok {
		return x
	}
	if v, ok := f["engine"]; ok {
		x.Engine, _ = p.word(v.val, "execution.engine")
		switch x.Engine {
		case EngineInProcess, EngineTemporal, "":
		default:
			p.add(v.line(), "execution.engine", "unknown engine %q (in_process or temporal)", x.Engine)
		}
	}
	if v, ok := f["address"]; ok {
		x.Address = strings.TrimSpace(p.requiredStr(v.val, "execution.address"))
		if x.Address != "" {
			if host, port, err := net.SplitHostPort(x.Address); err != nil || host == "" || port == "" {
				p.add(v.line(), "execution.address", "expected HOST:PORT, got %q", x.Address)
			}
		}
	}
	if v, ok := f["namespace"]; ok {
		x.Namespace, _ = p.word(v.val, "execution.namespace")
	}
	if v, ok := f["task_queue"]; ok {
		x.TaskQueue, _ = p.word(v.val, "execution.task_queue")
	}
	if !x.Temporal() {
		for _, k := range []string{"address", "namespace", "task_queue"} {
			if v, ok := f[k]; ok {
				p.add(v.line(), "execution."+k, "only used with engine: temporal")
			}
		}
		return x
	}
	if x.Namespace == "" {
		x.Namespace = DefaultTemporalNamespace
	}
	if x.TaskQueue == "" {
		x.TaskQueue = DefaultTemporalTaskQueue
	}
	return x
}
