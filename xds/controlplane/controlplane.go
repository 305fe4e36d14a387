// Package controlplane serves Envoy its configuration over ADS, with
// go-control-plane's snapshot cache: every policy becomes one snapshot,
// checked for consistency before it is set, shared by every Envoy node of
// the gateway.
package controlplane

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/xds/resources"
)

// allNodes gives every Envoy the same snapshot: replicas of the gateway
// are identical, whatever node ID their bootstrap names.
type allNodes struct{}

func (allNodes) ID(*corev3.Node) string { return "switchyard" }

// ControlPlane holds the snapshot cache and the ADS server.
type ControlPlane struct {
	cache   cache.SnapshotCache
	opts    resources.Options
	log     *slog.Logger
	version atomic.Value // string
}

// New returns a control plane with an empty cache.
func New(opts resources.Options, log *slog.Logger) *ControlPlane {
	return &ControlPlane{cache: cache.NewSnapshotCache(true, allNodes{}, nil), opts: opts, log: log}
}

// Apply builds, checks and serves the snapshot of p. On error the previous
// snapshot keeps serving.
func (c *ControlPlane) Apply(ctx context.Context, p *policy.Policy) error {
	snap, err := resources.Snapshot(p, c.opts)
	if err != nil {
		return err
	}
	if err := c.cache.SetSnapshot(ctx, allNodes{}.ID(nil), snap); err != nil {
		return err
	}
	c.version.Store(p.Version)
	return nil
}

// Version returns the policy version being served.
func (c *ControlPlane) Version() string {
	v, _ := c.version.Load().(string)
	return v
}

// Register adds the ADS service to a gRPC server.
func (c *ControlPlane) Register(ctx context.Context, g *grpc.Server) {
	srv := serverv3.NewServer(ctx, c.cache, callbacks{log: c.log})
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, srv)
}

// ServerOptions are the gRPC options an ADS server needs: Envoy keeps one
// long stream open, so keepalives must let it live and detect dead peers.
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(1000),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 5 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
	}
}
