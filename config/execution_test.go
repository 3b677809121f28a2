package config

import "testing"

func TestExecution(t *testing.T) {
	const agents = "agents:\n  a: {model: test}\n"
	m := mustParse(t, agents)
	if m.Execution.Temporal() {
		t.Errorf("default execution = %+v", m.Execution)
	}
	m = mustParse(t, agents+"execution: {engine: temporal, address: \"127.0.0.1:7233\"}\n")
	x := m.Execution
	if !x.Temporal() || x.Address != "127.0.0.1:7233" || x.Namespace != DefaultTemporalNamespace || x.TaskQueue != DefaultTemporalTaskQueue {
		t.Errorf("temporal execution = %+v", x)
	}
	env := map[string]string{EnvTemporalAddress: "10.0.0.2:7233"}
	if got := x.ResolvedAddress(func(k string) string { return env[k] }); got != "10.0.0.2:7233" {
		t.Errorf("address with %s set = %q", EnvTemporalAddress, got)
	}
	if got := x.ResolvedAddress(func(string) string { return "" }); got != "127.0.0.1:7233" {
		t.Errorf("address = %q", got)
	}
	m = mustParse(t, agents+"execution:\n  engine: temporal\n  namespace: ns\n  task_queue: q\n")
	if m.Execution.Namespace != "ns" || m.Execution.TaskQueue != "q" {
		t.Errorf("execution = %+v", m.Execution)
	}

	diffLines(t, parseErr(t, agents+"execution:\n  engine: nomad\n"), []string{
		`agentpool.yaml:4: execution.engine: unknown engine "nomad" (in_process or temporal)`,
	})
	diffLines(t, parseErr(t, agents+"execution:\n  engine: temporal\n  address: localhost\n  queue: x\n"), []string{
		`agentpool.yaml:5: execution.address: expected HOST:PORT, got "localhost"`,
		`agentpool.yaml:6: execution.queue: unknown field "queue"`,
	})
	diffLines(t, parseErr(t, agents+"execution:\n  address: \"h:1\"\n"), []string{
		`agentpool.yaml:4: execution.address: only used with engine: temporal`,
	})
}
