package events

import (
	"context"
	"errors"
	"log/slog"

	"github.com/switchyard/switchyard/state/ledger"
)

// Publisher sends each finished request's usage event to every target,
// each through its own [ledger.Writer] (a queue, batches, retries with
// backoff), so that one target's outage neither delays nor duplicates
// another's events.
type Publisher struct {
	writers []*ledger.Writer
}

// NewPublisher starts one writer per named target, with o (o.Logger is
// given the target's name).
func NewPublisher(o ledger.WriterOptions, targets map[string]Target) *Publisher {
	p := &Publisher{}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	for name, t := range targets {
		o.Logger = log.With(slog.String("sink", "events_"+name))
		p.writers = append(p.writers, ledger.NewWriter(Records(t), o))
	}
	return p
}

// Write queues the usage event of r for every target; it never waits.
func (p *Publisher) Write(r ledger.Record) {
	for _, w := range p.writers {
		w.Write(r)
	}
}

// Flush waits until every event queued before the call has gone out.
func (p *Publisher) Flush(ctx context.Context) error {
	var errs []error
	for _, w := range p.writers {
		errs = append(errs, w.Flush(ctx))
	}
	return errors.Join(errs...)
}

// Close sends what is queued, within ctx, and stops the writers.
func (p *Publisher) Close(ctx context.Context) error {
	var errs []error
	for _, w := range p.writers {
		errs = append(errs, w.Close(ctx))
	}
	return errors.Join(errs...)
}
