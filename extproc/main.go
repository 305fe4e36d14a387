// Command extproc is Switchyard's Envoy external processor: it runs the
// filter chain (auth, routing, translation, usage) for every request Envoy
// hands it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard/switchyard/extproc/extprocapp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := extprocapp.Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(1)
	}
}
