package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrSpoolFull reports a commit that could neither be written nor kept. It
// comes wrapped together with the ErrUnavailable that caused it.
var ErrSpoolFull = errors.New("commit spool full")

// Spooler keeps commits that failed because the store was unavailable and
// writes them once it is back, so that no spend is lost to an outage. The
// spool is bounded; what does not fit is counted and reported. Replaying is
// safe because Commit is idempotent per reservation: a commit that did reach
// Redis before the connection broke is replayed as a no-op.
//
// A spooled commit must be replayed within the store's Retention; after that
// the reservation is forgotten and the commit is dropped as unknown, counted
// in switchyard_store_dropped_commits_total{reason="unknown_reservation"}.
type Spooler struct {
	budgets Budgets
	limit   int
	metrics *Metrics

	replaying sync.Mutex // one Replay at a time
	mu        sync.Mutex
	queue     []spooledCommit
}

type spooledCommit struct {
	id     ReservationID
	actual int64
}

// NewSpooler returns a spooler over b that keeps at most limit commits.
func NewSpooler(b Budgets, limit int, m *Metrics) *Spooler {
	return &Spooler{budgets: b, limit: limit, metrics: m}
}

// Commit commits through the store. When the store is unavailable it keeps
// the commit and returns OutcomeSpooled; when the spool is full as well it
// returns an error matching both ErrUnavailable and ErrSpoolFull.
func (s *Spooler) Commit(ctx context.Context, id ReservationID, actual int64) (Outcome, error) {
	out, err := s.budgets.Commit(ctx, id, actual)
	if !errors.Is(err, ErrUnavailable) {
		return out, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) >= s.limit {
		s.metrics.drop("spool_full", len(s.queue))
		return 0, fmt.Errorf("%w: %w", ErrSpoolFull, err)
	}
	s.queue = append(s.queue, spooledCommit{id: id, actual: actual})
	s.metrics.spool(len(s.queue))
	return OutcomeSpooled, nil
}

// Len returns how many commits wait in the spool.
func (s *Spooler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Replay writes spooled commits in the order they came and returns how many
// it wrote. It stops at the first ErrUnavailable (or a done ctx), keeps the
// rest, and returns that error. Commits the store refuses for good (the
// reservation is unknown) are dropped and counted.
func (s *Spooler) Replay(ctx context.Context) (int, error) {
	s.replaying.Lock()
	defer s.replaying.Unlock()
	s.mu.Lock()
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()

	written := 0
	for i, c := range batch {
		_, err := s.budgets.Commit(ctx, c.id, c.actual)
		switch {
		case err == nil:
			written++
			s.metrics.replay(s.depth(len(batch) - i - 1))
		case errors.Is(err, ErrUnavailable) || ctx.Err() != nil:
			s.mu.Lock()
			s.queue = append(batch[i:], s.queue...)
			s.mu.Unlock()
			return written, err
		case errors.Is(err, ErrUnknownReservation):
			s.metrics.drop("unknown_reservation", s.depth(len(batch)-i-1))
		default:
			s.metrics.drop("rejected", s.depth(len(batch)-i-1))
		}
	}
	return written, nil
}

// depth is the spool length with pending still to replay.
func (s *Spooler) depth(pending int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) + pending
}

// Run replays every interval until ctx is done.
func (s *Spooler) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.Len() > 0 {
				_, _ = s.Replay(ctx) // failures stay spooled and counted
			}
		}
	}
}
