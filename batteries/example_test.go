package batteries_test

import (
	"context"
	"fmt"

	"github.com/agentpool/agentpool/batteries"
	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

// A program that wants everything agentpool ships parses the manifest
// against the registry's model types and builds the pool with it.
func ExampleRegistry() {
	reg := batteries.Registry()
	fmt.Println(reg.ModelTypes())
	m, err := config.ParseWith("agentpool.yaml", []byte(`
agents:
  greeter:
    model: {type: test, custom_output_text: "hello"}
    tools: [fetch]
`), batteries.ConfigOptions(reg))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := pool.New(m, pool.Options{Registry: reg})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	res, err := p.RunSink(context.Background(), pool.RunRequest{Node: "greeter", Prompt: "hi"}, event.SinkFunc(func(event.Event) {}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Result.Output)
	// Output:
	// [test scripted fallback input openai anthropic]
	// hello
}
