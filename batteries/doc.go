// Package batteries wires everything agentpool ships into a pool.Registry:
// the openai and anthropic model types (with every OpenAI-compatible
// provider of config.Providers), the fetch toolset (tool/webfetch) and MCP
// servers (tool/mcp). The agentpool command, the protocol servers and a
// library user who wants all of it call Registry; a program that wants a
// smaller build makes its own pool.NewRegistry and adds only what it uses
// (the factories here are exported for that).
//
// Nothing here runs at init time: the registry is a value the program
// passes to pool.New (Options.Registry) and whose ModelTypes it passes to
// the manifest parser (config.Options). This package is where the provider
// SDKs and HTTP clients enter a program's dependencies; packages pool,
// agent, spawn, session, hook, event, tool and config do not import it.
package batteries
