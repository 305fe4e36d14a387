package extprocapp

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/events"
	"github.com/switchyard/switchyard/state/ledger"
)

// How often a ledger that could not be opened is tried again.
const (
	ledgerRetryMin = 500 * time.Millisecond
	ledgerRetryMax = 10 * time.Second
)

// openLedger opens the usage ledger the policy names and starts its
// batching writer. The ledger is chosen at startup; a reload that changes
// gateway.ledger takes effect at the next restart (logged then).
//
// A database that cannot be reached does not stop the process: it serves,
// the writer keeps the records (in its spool) and writes them once the
// ledger opens in the background (ledger.Deferred).
func openLedger(ctx context.Context, p *policy.Policy, reg prometheus.Registerer, d, held disk, log *slog.Logger) (*ledger.Deferred, *ledger.Writer, error) {
	c := ledger.Config{Driver: p.Gateway.Ledger.Driver, DSN: p.Gateway.Ledger.Path}
	if ref := p.Gateway.Ledger.DSN; ref != nil {
		dsn, err := secrets{}.Resolve(*ref)
		if err != nil {
			return nil, nil, fmt.Errorf("ledger dsn: %w", err)
		}
		c.DSN = dsn
	}
	db, err := ledger.OpenDeferred(ctx, c, ledgerRetryMin, ledgerRetryMax, log)
	if err != nil {
		return nil, nil, err
	}
	m := ledger.NewMetrics(reg)
	w := ledger.NewWriter(db, ledger.WriterOptions{
		BatchSize:     p.Gateway.Ledger.BatchSize,
		FlushInterval: p.Gateway.Ledger.FlushInterval,
		Capacity:      p.Gateway.Ledger.Buffer,
		Metrics:       m,
		Logger:        log,
		Spool:         d.spool,
		Spooled:       d.left,
		HoldSpool:     held.spool,
		Held:          held.left,
	})
	select {
	case <-db.Opened():
		log.Info("usage ledger open", slog.String("driver", db.Driver()))
	default:
	}
	return db, w, nil
}

// openEvents starts the events the policy asks for — usage events through
// a Publisher, budget alerts through an Alerter — to the Redis Stream when
// the store is Redis (off, logged, without it) and to the webhook when one
// is set; nil, nil when neither. Like the ledger, they are chosen at
// startup.
func openEvents(p *policy.Policy, rc redis.Scripter, log *slog.Logger) (*events.Publisher, *events.Alerter, error) {
	e := p.Gateway.Events
	if e == nil {
		return nil, nil, nil
	}
	var (
		stream  *events.Stream
		webhook *events.Webhook
	)
	targets := map[string]events.Target{}
	if rc != nil {
		stream = events.NewStream(rc, storePrefix, e.Stream, e.MaxLen)
		targets["stream"] = stream
		log.Info("events to a Redis Stream", slog.String("stream", events.Key(storePrefix, e.Stream)), slog.Int64("max_len", e.MaxLen))
	} else {
		log.Warn("the events stream needs Redis (-redis): off")
	}
	if w := e.Webhook; w != nil {
		secret, err := secrets{}.Resolve(w.Secret)
		if err != nil {
			return nil, nil, fmt.Errorf("events webhook secret: %w", err)
		}
		if secret == "" {
			return nil, nil, fmt.Errorf("events webhook secret: %s is empty", refName(w.Secret))
		}
		webhook = events.NewWebhook(w.URL, []byte(secret), w.Timeout)
		targets["webhook"] = webhook
		log.Info("events to a webhook")
	}
	if len(targets) == 0 {
		return nil, nil, nil
	}
	pub := events.NewPublisher(ledger.WriterOptions{
		BatchSize:  p.Gateway.Ledger.BatchSize,
		Capacity:   p.Gateway.Ledger.Buffer,
		MaxBackoff: 5 * time.Second, // Redis restarts in seconds; do not wait 30 after it
		Logger:     log,
	}, targets)
	var hook events.Target
	if webhook != nil {
		hook = webhook
	}
	return pub, events.NewAlerter(stream, hook, log.With(slog.String("sink", "budget_alerts"))), nil
}

// storePrefix starts every Redis key of the shared store (store.Options).
const storePrefix = "sy"

// refName says where a secret comes from, never what it is.
func refName(r policy.SecretRef) string {
	if r.Env != "" {
		return "environment variable " + r.Env
	}
	return "file " + r.File
}
