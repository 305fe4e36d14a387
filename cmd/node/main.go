// Command node runs one gateway node's Go side in one process: the
// control plane (xds) and ext_proc, as `make run` starts them. Its
// arguments are xds's flags, then "--", then ext_proc's:
//
//	node -config configs/local -listen 127.0.0.1:18000 -- -config configs/local -listen unix:.run/extproc.sock
//
// Each keeps its own flags, listeners, metrics, logs and policy reloads,
// as when they run apart; together they share one Go runtime and one copy
// of gRPC and of the Envoy protobufs, about a third of a node's idle
// memory (docs/BENCHMARKS.md). When either stops, so does the other, and
// the process exits non-zero if either failed. Where several gateway
// nodes share one control plane (deploy/kubernetes), run xds and extproc
// apart instead.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/switchyard/switchyard/extproc/extprocapp"
	"github.com/switchyard/switchyard/xds/xdsapp"
)

// runFunc is how each side runs: until ctx ends, or it fails.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, xdsapp.Run, extprocapp.Run); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

// run splits args at "--" and runs both sides until ctx ends or either
// returns, which stops the other.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, controlPlane, processor runFunc) error {
	i := slices.Index(args, "--")
	if i < 0 {
		return errors.New(`usage: node [xds flags] -- [extproc flags]`)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg   sync.WaitGroup
		errs [2]error
	)
	for n, side := range []struct {
		name string
		run  runFunc
		args []string
	}{{"xds", controlPlane, args[:i]}, {"extproc", processor, args[i+1:]}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			if err := side.run(ctx, side.args, stdout, stderr); err != nil {
				errs[n] = fmt.Errorf("%s: %w", side.name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs[:]...)
}
