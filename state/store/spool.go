package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/switchyard/switchyard/state/spool"
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
//
// With a disk spool (NewDiskSpooler) every kept commit is also appended to
// it, and acknowledged there once written or dropped, so that the commits
// of a process that dies are replayed by the next one; replay is then at
// least once, and Commit's idempotency makes it count once.
type Spooler struct {
	budgets Budgets
	limit   int
	metrics *Metrics
	disk    *spool.Spool
	log     *slog.Logger

	replaying sync.Mutex // one Replay at a time
	mu        sync.Mutex
	queue     []spooledCommit
}

// spooledCommit is one commit kept for replay, as the disk spool keeps it
// too (JSON).
type spooledCommit struct {
	ID     ReservationID `json:"id"`
	Actual int64         `json:"actual"`
	// Lines is set for spend no reservation covered (see Record): replay
	// first opens an uncapped reservation of nothing on them.
	Lines []BudgetLine `json:"lines,omitempty"`
}

// recordTTL is how long the empty reservation Record opens may live before
// its commit follows; the two calls come back to back.
const recordTTL = time.Minute

// NewSpooler returns a spooler over b that keeps at most limit commits, in
// memory.
func NewSpooler(b Budgets, limit int, m *Metrics) *Spooler {
	return &Spooler{budgets: b, limit: limit, metrics: m}
}

// NewDiskSpooler is NewSpooler whose commits are kept on disk as well.
// spooled are the commits disk handed back when it was opened (those a
// previous process kept and did not write): they are queued first, even
// past limit. One that does not decode is queued empty, to stay in step
// with disk's acknowledgements, and dropped as rejected at replay.
func NewDiskSpooler(b Budgets, limit int, m *Metrics, disk *spool.Spool, spooled [][]byte, log *slog.Logger) *Spooler {
	s := &Spooler{budgets: b, limit: limit, metrics: m, disk: disk, log: log}
	for _, raw := range spooled {
		var c spooledCommit
		if err := json.Unmarshal(raw, &c); err != nil {
			log.Error("a spooled budget commit does not decode", slog.Any("error", err))
			c = spooledCommit{}
		}
		s.queue = append(s.queue, c)
	}
	if len(s.queue) > 0 {
		s.metrics.spool(len(s.queue))
		log.Info("budget commits a previous process kept during a store outage are queued for replay", slog.Int("commits", len(s.queue)))
	}
	return s
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
	return s.keep(spooledCommit{ID: id, Actual: actual}, err)
}

// keep queues c after the store failed with cause.
func (s *Spooler) keep(c spooledCommit, cause error) (Outcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) >= s.limit {
		s.metrics.drop("spool_full", len(s.queue))
		return 0, fmt.Errorf("%w: %w", ErrSpoolFull, cause)
	}
	if s.disk != nil {
		b, _ := json.Marshal(c) // plain data always encodes
		// Kept in memory even when the disk spool fails or is full; it
		// counts that.
		_ = s.disk.Append(b)
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
	c := spooledCommit{ID: id, Actual: actual, Lines: open}
	out, err := s.write(ctx, c)
	if !errors.Is(err, ErrUnavailable) {
		return out, err
	}
	return s.keep(c, err)
}

// write sends one spooled item to the store.
func (s *Spooler) write(ctx context.Context, c spooledCommit) (Outcome, error) {
	if c.Lines != nil {
		err := s.budgets.Reserve(ctx, c.ID, c.Lines, 0, recordTTL)
		if err != nil && !errors.Is(err, ErrDuplicateReservation) {
			return 0, err
		}
	}
	return s.budgets.Commit(ctx, c.ID, c.Actual)
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
		if err == nil || !(errors.Is(err, ErrUnavailable) || ctx.Err() != nil) {
			s.settled()
		}
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

// settled tells the disk spool that the oldest commit kept is written or
// dropped: it is not to be replayed after a restart.
func (s *Spooler) settled() {
	if s.disk == nil {
		return
	}
	if err := s.disk.Ack(1); err != nil {
		// Written already: at worst replayed once more after a restart,
		// which Commit ignores.
		s.log.Warn("marking a replayed budget commit in the disk spool", slog.Any("error", err))
	}
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
