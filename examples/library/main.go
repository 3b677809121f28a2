// Command library is the README's Go example: a pool from a manifest, run
// offline on scripted models, its delegation printed as it happens.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/event"
	"github.com/agentpool/agentpool/pool"
)

const manifest = `
agents:
  lead:
    model:
      type: scripted
      turns:
        - tool_calls: [{name: ask_researcher, args: {prompt: "One fact about Go"}}]
        - "The researcher says: Go has goroutines."
    workers: [researcher]
  researcher:
    model: {type: test, custom_output_text: "Go has goroutines."}
`

func main() {
	m, err := config.Parse("agentpool.yaml", []byte(manifest))
	if err != nil {
		log.Fatal(err)
	}
	p, err := pool.New(m, pool.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	for e, err := range p.Run(context.Background(), pool.RunRequest{Prompt: "Tell me about Go"}) {
		if err != nil {
			log.Fatal(err)
		}
		switch v := e.(type) {
		case event.SpawnSessionStart:
			fmt.Println("start:", v.SourceName, "as a", v.SpawnMechanism)
		case event.SpawnSessionEnd:
			fmt.Println("end:  ", v.SourceName, v.StopReason)
		case event.StreamComplete:
			fmt.Println("answer:", v.Message.Content)
		}
	}
}
