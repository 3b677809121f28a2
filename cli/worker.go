package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/agentpool/agentpool/config"
	"github.com/agentpool/agentpool/pool"
)

func init() { extraCommands = append(extraCommands, newWorkerCmd) }

func newWorkerCmd(ext Extensions) *cobra.Command {
	var f poolFlags
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "Run the sessions of a pool whose execution engine is temporal",
		Long: "Run the workflows and activities of the pool's Temporal task queue (the manifest's execution block): " +
			"any number of workers, on any machines that share the pool's store. SIGTERM or SIGINT stops taking work and " +
			"lets what runs finish (up to 30 s), then hands the rest back to the other workers. " +
			"It is part of agentpool-full, which agentpool runs in its place.",
		Args: cobra.NoArgs,
		// Whatever the manifest says: the worker is the Temporal engine.
		Annotations: map[string]string{annotationNeeds: needsTemporal},
		RunE:        func(cmd *cobra.Command, _ []string) error { return workerMain(cmd, f) },
	}
	f.register(cmd, ext)
	return cmd
}

func workerMain(cmd *cobra.Command, f poolFlags) error {
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	f.worker = true
	p, tel, err := openPoolTelemetry(f, pool.Options{Logger: log})
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel, log) // last: flushes the spans of the worker's runs
	defer p.Close()
	x := p.Manifest().Execution
	if !x.Temporal() {
		return fmt.Errorf("the manifest's execution engine is %s: a worker runs pools with execution: {engine: temporal}", config.EngineInProcess)
	}
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, stopSignals...)
	defer stop()
	return f.ext.temporal().Work(ctx, p, log, tracerProvider(tel), cmd.ErrOrStderr())
}
