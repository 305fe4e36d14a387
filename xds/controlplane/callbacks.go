package controlplane

import (
	"context"
	"log/slog"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
)

// callbacks logs what Envoy accepts and, above all, what it rejects: a NACK
// means Envoy kept its previous configuration.
type callbacks struct {
	serverv3.CallbackFuncs
	log *slog.Logger
}

func (c callbacks) OnStreamRequest(_ int64, r *discoveryv3.DiscoveryRequest) error {
	if d := r.GetErrorDetail(); d != nil {
		c.log.Error("envoy rejected configuration", slog.String("node", r.GetNode().GetId()),
			slog.String("type", r.GetTypeUrl()), slog.String("version", r.GetVersionInfo()), slog.String("error", d.GetMessage()))
	} else if r.GetVersionInfo() != "" && r.GetResponseNonce() != "" {
		c.log.Debug("envoy acknowledged configuration", slog.String("node", r.GetNode().GetId()),
			slog.String("type", r.GetTypeUrl()), slog.String("version", r.GetVersionInfo()))
	}
	return nil
}

func (c callbacks) OnStreamOpen(_ context.Context, id int64, typ string) error {
	c.log.Info("envoy connected", slog.Int64("stream", id), slog.String("type", typ))
	return nil
}
