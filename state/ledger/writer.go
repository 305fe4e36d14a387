package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// WriterOptions tunes a Writer. Zero fields take the defaults.
type WriterOptions struct {
	// BatchSize is how many records one transaction writes at most, and how
	// many queued records make the writer write without waiting (500).
	BatchSize int
	// FlushInterval is how long a partial batch waits to be written (200ms).
	FlushInterval time.Duration
	// Capacity bounds the records kept in memory while the database is slow
	// or down (100_000, about 30 MB). Past it, records are dropped and
	// counted.
	Capacity int
	// MinBackoff and MaxBackoff bound the wait before retrying a batch the
	// database could not take; it doubles from one to the other (100ms, 30s).
	MinBackoff, MaxBackoff time.Duration
	// WriteTimeout bounds one batch's transaction (10s).
	WriteTimeout time.Duration
	// Metrics, when set, counts what the writer does.
	Metrics *Metrics
	// Logger reports records dropped and outages (slog.Default()).
	Logger *slog.Logger
	// Now stamps records that come without a Time (time.Now).
	Now func() time.Time
}

func (o *WriterOptions) defaults() {
	setDefault(&o.BatchSize, 500)
	setDefault(&o.FlushInterval, 200*time.Millisecond)
	setDefault(&o.Capacity, 100_000)
	setDefault(&o.MinBackoff, 100*time.Millisecond)
	setDefault(&o.MaxBackoff, 30*time.Second)
	setDefault(&o.WriteTimeout, 10*time.Second)
	o.MaxBackoff = max(o.MaxBackoff, o.MinBackoff)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

func setDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Writer writes records to a Ledger in batches, off the request path. Write
// only queues; a goroutine writes a batch once BatchSize records are queued
// or FlushInterval has passed, each batch in one transaction. When the
// database is unavailable the batch stays queued and is retried with
// backoff, while Write goes on queueing up to Capacity. Because inserts are
// idempotent by request ID, a batch that did commit before its error
// reached the writer is written again harmlessly.
//
// Records are dropped in three cases only, each counted in
// switchyard_ledger_dropped_records_total and logged: the queue is full, the
// database refuses the record itself (then the rest of its batch is still
// written), or the record has no request ID. Records still queued when the
// process dies are lost; Close writes them first.
type Writer struct {
	ledger  Sink
	o       WriterOptions
	metrics *Metrics
	log     *slog.Logger

	mu       sync.Mutex
	queue    []Record
	closed   bool
	accepted uint64        // records ever queued
	settled  uint64        // records ever taken off the queue, written or refused
	progress chan struct{} // closed and replaced whenever settled grows
	flushing int           // Flush calls waiting; partial batches go at once
	overflow int           // records dropped since the queue last had room
	lost     error         // set by Close when it dropped records it could not write

	wake    chan struct{}
	stop    context.CancelFunc
	stopped chan struct{}
}

// NewWriter starts a writer that writes to l. Close it to write what is
// queued; closing the writer does not close l.
func NewWriter(l Sink, o WriterOptions) *Writer {
	o.defaults()
	ctx, stop := context.WithCancel(context.Background())
	w := &Writer{
		ledger: l, o: o, metrics: o.Metrics, log: o.Logger,
		progress: make(chan struct{}), wake: make(chan struct{}, 1),
		stop: stop, stopped: make(chan struct{}),
	}
	w.metrics.depth(0)
	go w.run(ctx)
	return w
}

// Write queues r to be written. It never waits for the database. A record
// without a Time is stamped with the writer's clock.
func (w *Writer) Write(r Record) {
	if r.Time.IsZero() {
		r.Time = w.o.Now()
	}
	w.mu.Lock()
	reason := ""
	switch {
	case r.RequestID == "":
		reason = DropInvalid
	case w.closed:
		reason = DropClosed
	case len(w.queue) >= w.o.Capacity:
		reason = DropBufferFull
		w.overflow++
	}
	if reason != "" {
		first := w.overflow == 1
		w.mu.Unlock()
		w.metrics.drop(reason, 1)
		switch {
		case reason == DropBufferFull && first:
			w.log.Error("ledger buffer full: dropping usage records until it drains",
				slog.String("request_id", r.RequestID), slog.Int("capacity", w.o.Capacity))
		case reason != DropBufferFull:
			w.log.Error("ledger dropped a usage record", slog.String("reason", reason),
				slog.String("request_id", r.RequestID), slog.String("tenant", r.Tenant), slog.Time("time", r.Time))
		}
		return
	}
	overflowed := w.overflow
	w.overflow = 0
	w.queue = append(w.queue, r)
	w.accepted++
	depth := len(w.queue)
	w.metrics.depth(depth)
	w.mu.Unlock()
	if overflowed > 0 {
		w.log.Warn("ledger buffer has room again", slog.Int("dropped", overflowed))
	}
	if depth >= w.o.BatchSize {
		w.signal()
	}
}

// Len returns how many records wait to be written.
func (w *Writer) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.queue)
}

// Flush waits until every record queued before the call has been written
// (or refused), retrying through an outage until ctx is done. It fails if
// Close dropped some of them.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.accepted
	w.flushing++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.flushing--
		w.mu.Unlock()
	}()
	w.signal()
	for {
		w.mu.Lock()
		settled, progress, queued, lost := w.settled, w.progress, len(w.queue), w.lost
		w.mu.Unlock()
		if settled >= target {
			return nil
		}
		if lost != nil {
			return lost
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ledger: flush: %d records still queued: %w", queued, ctx.Err())
		case <-progress:
		}
	}
}

// Close stops taking records, writes those queued and stops the writer.
// Records it could not write before ctx was done are dropped, counted and
// reported in the error.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	closed := w.closed
	w.closed = true
	w.mu.Unlock()
	if closed {
		<-w.stopped
		return nil
	}
	err := w.Flush(ctx)
	w.stop()
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	left := len(w.queue)
	if left == 0 {
		return nil
	}
	w.queue = nil
	w.metrics.depth(0)
	w.metrics.drop(DropClosed, left)
	w.log.Error("ledger closed with usage records unwritten", slog.Int("dropped", left))
	w.lost = fmt.Errorf("ledger: closed with %d records unwritten: %w", left, err)
	close(w.progress) // a Flush still waiting learns of the loss
	w.progress = make(chan struct{})
	return w.lost
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Writer) run(ctx context.Context) {
	defer close(w.stopped)
	tick := time.NewTicker(w.o.FlushInterval)
	defer tick.Stop()
	for {
		partial := false
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-tick.C:
			partial = true
		}
		w.drain(ctx, partial)
	}
}

// drain writes batches until the queue holds less than a batch, or nothing
// when partial batches are due. A batch the database cannot take is retried
// after a growing delay until it goes through or ctx is done.
func (w *Writer) drain(ctx context.Context, partial bool) {
	var delay time.Duration
	failures := 0
	for ctx.Err() == nil {
		batch := w.next(partial)
		if len(batch) == 0 {
			return
		}
		if err := w.writeBatch(ctx, batch); err != nil {
			failures++
			delay = w.backoff(delay)
			w.log.Warn("ledger unavailable: keeping usage records to retry", slog.Int("queued", w.Len()),
				slog.Int("attempt", failures), slog.Duration("retry_in", delay), slog.Any("error", err))
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		if failures > 0 {
			w.log.Info("ledger writes resumed", slog.Int("failed_attempts", failures), slog.Int("queued", w.Len()))
			failures, delay = 0, 0
		}
	}
}

// next returns the batch at the head of the queue without taking it off:
// only writing it does. It returns nothing while less than a batch is
// queued, unless partial batches are due or a Flush waits.
func (w *Writer) next(partial bool) []Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(w.queue), w.o.BatchSize)
	if n < w.o.BatchSize && !partial && w.flushing == 0 {
		return nil
	}
	return w.queue[:n:n]
}

// writeBatch writes batch, the head of the queue, and takes what it settled
// off the queue. When the database refuses the batch it writes the records
// one by one, so that only the bad ones are dropped. The error is that of
// the database being unavailable; the unsettled records stay queued.
func (w *Writer) writeBatch(ctx context.Context, batch []Record) error {
	err := w.insert(ctx, batch)
	if err == nil || w.unavailable(ctx, err) {
		if err == nil {
			w.settle(len(batch))
		}
		return err
	}
	for i := range batch {
		err := w.insert(ctx, batch[i:i+1])
		if err != nil && w.unavailable(ctx, err) {
			w.settle(i)
			return err
		}
		if err != nil {
			w.metrics.drop(DropRefused, 1)
			w.log.Error("ledger refused a usage record: dropped", slog.String("request_id", batch[i].RequestID),
				slog.String("tenant", batch[i].Tenant), slog.Any("error", err))
		}
	}
	w.settle(len(batch))
	return nil
}

func (w *Writer) unavailable(ctx context.Context, err error) bool {
	return errors.Is(err, ErrUnavailable) || ctx.Err() != nil
}

func (w *Writer) insert(ctx context.Context, records []Record) error {
	ctx, cancel := context.WithTimeout(ctx, w.o.WriteTimeout)
	defer cancel()
	start := time.Now()
	n, err := w.ledger.Insert(ctx, records)
	took := time.Since(start)
	switch {
	case err == nil:
		w.metrics.batch(len(records), n, took)
	case w.unavailable(ctx, err):
		w.metrics.failed("unavailable", took)
	default:
		w.metrics.failed("refused", took)
	}
	return err
}

// settle takes the first n records off the queue.
func (w *Writer) settle(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	clear(w.queue[:n]) // let the strings go
	w.queue = w.queue[n:]
	if len(w.queue) == 0 {
		w.queue = nil
	}
	w.settled += uint64(n)
	close(w.progress)
	w.progress = make(chan struct{})
	w.metrics.depth(len(w.queue))
}

// backoff returns the delay after prev: double, within the bounds, with up
// to a fifth more at random so that replicas do not retry in step.
func (w *Writer) backoff(prev time.Duration) time.Duration {
	d := min(max(2*prev, w.o.MinBackoff), w.o.MaxBackoff)
	return d + rand.N(d/5+1)
}
