// Package temporalcli is the Temporal part of agentpool-full's command line:
// the pool.Engine that submits a pool's root runs to its Temporal task queue
// (for every command that runs sessions when the manifest says execution:
// {engine: temporal}) and the loop of `agentpool worker`, both over package
// durable. Temporal implements cli.Temporal; cmd/agentpool-full hands it to
// cli.Main. It is a package of its own, which package cli does not
// import, so that agentpool-light links neither the Temporal SDK nor gRPC:
// it re-executes itself as agentpool-full for the commands that need it.
package temporalcli
