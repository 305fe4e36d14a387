// Command xds is Switchyard's control plane: it serves Envoy the listener,
// routes and provider clusters built from the YAML policy, and pushes every
// valid edit without a restart. "xds check -config DIR" validates a policy.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/switchyard/switchyard/xds/xdsapp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := xdsapp.Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(1)
	}
}
