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
// writes them once it is back, so that no spend is lost to an outage; Record
// does the same for spend no reservation covered. The
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
	// lines is set for spend no reservation covered (see Record): replay
	// first opens an uncapped reservation of nothing on them.
	lines []BudgetLine
}

// recordTTL is how long the empty reservation Record opens may live before
// its commit follows; the two calls come back to back.
const recordTTL = time.Minute

// NewSpooler returns a spooler over b that keeps at most limit commits.
func NewSpooler(b Budgets, limit int, m *Metrics) *Spooler {
	return &Spooler{budgets: b, limit: limit, metrics: m}
}

// Commit commits through the store. When the store is unavailable it keeps
// the commit and returns OutcomeSpooled; when the spool is full as well it
// returns an error matching both ErrUnavailable and ErrSpoolFull.
func (s *Spooler) Commit(ctx context.Context, id ReservationID, actual int64) (Outcome, error) {
	out, err := s.budgets.Commit(ctx, id, actual)
	if err != nil {
		return s.Keep(id, actual, err)
	}
	return out, nil
}

// Keep takes over a commit of actual on id that failed elsewhere with err,
// such as the commit inside a Settle: when err is an ErrUnavailable the
// commit is kept for replay, as Commit keeps its own, and OutcomeSpooled
// returned. Any other error is returned as it is.
func (s *Spooler) Keep(id ReservationID, actual int64, err error) (Outcome, error) {
	if !errors.Is(err, ErrUnavailable) {
		return 0, err
	}
	return s.keep(spooledCommit{id: id, actual: actual}, err)
}

// keep queues c after the store failed with cause.
func (s *Spooler) keep(c spooledCommit, cause error) (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) >= s.limit {
		s.metrics.drop("spool_full", len(s.queue))
		return 0, fmt.Errorf("%w: %w", ErrSpoolFull, cause)
	}
	s.queue = append(s.queue, c)
	s.metrics.spool(len(s.queue))
	return OutcomeSpooled, nil
}

// Record records spend that no reservation covers: a request admitted
// while the store was unavailable, under a limit that fails open. It opens
// a reservation of nothing under id on lines, uncapped (the spend already
// happened and must count even past a limit), and commits actual on it. When
// the store is unavailable both steps are kept and replayed together, so
// the spend lands in the period current at replay. The id must be fresh:
// Record after a reservation under the same id would be a no-op.
func (s *Spooler) Record(ctx context.Context, id ReservationID, lines []BudgetLine, actual int64) (Outcome, error) {
	open := make([]BudgetLine, len(lines))
	for i, l := range lines {
		l.Limit = maxExact
		open[i] = l
	}
	c := spooledCommit{id: id, actual: actual, lines: open}
	out, err := s.write(ctx, c)
	if !errors.Is(err, ErrUnavailable) {
		return out, err
	}
	return s.keep(c, err)
}

// write sends one spooled item to the store.
func (s *Spooler) write(ctx context.Context, c spooledCommit) (Outcome, error) {
	if c.lines != nil {
		err := s.budgets.Reserve(ctx, c.id, c.lines, 0, recordTTL)
		if err != nil && !errors.Is(err, ErrDuplicateReservation) {
			return 0, err
		}
	}
	return s.budgets.Commit(ctx, c.id, c.actual)
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
		_, err := s.write(ctx, c)
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
