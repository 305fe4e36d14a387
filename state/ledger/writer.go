package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/switchyard/switchyard/state/spool"
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
	// Spool, when set, keeps every queued record on disk until it is
	// written, so that the records of a process that dies are written by
	// the next one. Spooled are the records the spool handed back when it
	// was opened: the writer queues them first. The writer acknowledges
	// records to the spool as they are written or refused; it does not
	// close it.
	Spool   *spool.Spool
	Spooled [][]byte
	// HoldSpool, when set with Spool, keeps the records Hold is given
	// until Write brings the final one: the record of an answer about to
	// reach its client, in case the process dies before it is written.
	// Held are the records it handed back when opened: the writer queues
	// them after Spooled, so that a final record of the same request, if
	// there is one, is written first and the held one skipped.
	HoldSpool *spool.Spool
	Held      [][]byte
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
// process dies are lost, unless the writer has a spool (then the next
// process writes them); Close writes them first.
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

	// hmu guards the holds and the hold spool, apart from mu: a request's
	// Hold, in the reply that sends its answer, must not queue behind
	// another's Write (its spool append) or the writer's batches.
	hmu sync.Mutex
	// holdOrder lists the request IDs held, oldest first, up to the first
	// not yet released; held has those not released.
	holdOrder []string
	held      map[string]struct{}
	// released is closed and replaced when a hold is let go while
	// holdWaiters > 0 (FlushAnswered calls waiting).
	released    chan struct{}
	holdWaiters int

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
		stop: stop, stopped: make(chan struct{}), held: map[string]struct{}{}, released: make(chan struct{}),
	}
	if o.Spool == nil {
		o.HoldSpool, o.Held = nil, nil
		w.o = o
	}
	w.unspool(o.Spooled, o.Held)
	go w.run(ctx)
	return w
}

// unspool queues the records a previous process spooled and did not write.
// One that does not decode (it passed its checksum, so only a change of
// the Record type could cause that) is queued empty, so that it stays in
// step with the spool's acknowledgements; the database refuses it and it
// is counted as refused.
//
// Held records come after them: each moves to the spool of records to
// write (a final record of its request, queued before it, makes the ledger
// skip it), and is then let go from the hold spool.
func (w *Writer) unspool(spooled, held [][]byte) {
	for _, b := range spooled {
		w.queue = append(w.queue, w.decode(b))
	}
	for _, b := range held {
		_ = w.o.Spool.Append(b) // kept in memory even if this fails; counted
		w.queue = append(w.queue, w.decode(b))
	}
	if len(held) > 0 {
		if err := w.o.HoldSpool.Ack(len(held)); err != nil {
			w.log.Warn("ledger: letting go of held records", slog.Any("error", err))
		}
	}
	w.accepted = uint64(len(w.queue))
	w.metrics.depth(len(w.queue))
	if len(w.queue) > 0 {
		w.log.Info("ledger: usage records a previous process left unwritten are queued",
			slog.Int("records", len(spooled)), slog.Int("held", len(held)))
	}
}

func (w *Writer) decode(b []byte) Record {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		w.log.Error("ledger: a spooled usage record does not decode", slog.Any("error", err))
		return Record{}
	}
	return r
}

// Holding reports whether Hold keeps anything.
func (w *Writer) Holding() bool { return w.o.HoldSpool != nil }

// frame is a record encoded for a spool, in a buffer reused once the
// spool has written it: each request spools two.
type frame struct{ b []byte }

var frames = sync.Pool{New: func() any { return &frame{b: make([]byte, 0, spoolFrameSize)} }}

// encodeFrame encodes r behind the room for the spool's header.
func encodeFrame(r *Record) *frame {
	f := frames.Get().(*frame)
	f.b = r.appendJSON(spool.Frame(f.b[:0]))
	return f
}

// free gives the buffer back, unless a rare record grew it far past the
// usual size.
func (f *frame) free() {
	if cap(f.b) <= 4*spoolFrameSize {
		frames.Put(f)
	}
}

// Hold spools r, the record of an answer about to reach its client, until
// Write (or Release) of its request: if the process dies in between, the
// next one writes it. Without a hold spool it does nothing.
func (w *Writer) Hold(r Record) {
	if w.o.HoldSpool == nil || r.RequestID == "" {
		return
	}
	if r.Time.IsZero() {
		r.Time = w.o.Now()
	}
	f := encodeFrame(&r)
	defer f.free()
	w.hmu.Lock()
	defer w.hmu.Unlock()
	if _, dup := w.held[r.RequestID]; dup {
		return
	}
	_ = w.o.HoldSpool.AppendFrame(f.b) // counted by the spool when it fails
	w.held[r.RequestID] = struct{}{}
	w.holdOrder = append(w.holdOrder, r.RequestID)
}

// Release lets go of the record held for request id, if any, without
// writing anything: the request is not to be recorded.
func (w *Writer) Release(id string) {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	w.release(id)
}

// release lets go of id's hold; holds are let go from the spool oldest
// first, as far as every older one is released too. The caller holds hmu.
func (w *Writer) release(id string) {
	if _, ok := w.held[id]; !ok {
		return
	}
	delete(w.held, id)
	if w.holdWaiters > 0 {
		close(w.released)
		w.released = make(chan struct{})
	}
	n := 0
	for n < len(w.holdOrder) {
		if _, still := w.held[w.holdOrder[n]]; still {
			break
		}
		n++
	}
	if n == 0 {
		return
	}
	clear(w.holdOrder[:n])
	w.holdOrder = w.holdOrder[n:]
	if err := w.o.HoldSpool.Ack(n); err != nil {
		w.log.Warn("ledger: letting go of held records", slog.Any("error", err))
	}
}

// Write queues r to be written. It never waits for the database. A record
// without a Time is stamped with the writer's clock.
func (w *Writer) Write(r Record) {
	if r.Time.IsZero() {
		r.Time = w.o.Now()
	}
	var encoded *frame
	if w.o.Spool != nil && r.RequestID != "" {
		encoded = encodeFrame(&r)
		defer encoded.free()
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
		w.Release(r.RequestID)
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
	if w.o.Spool != nil {
		// Kept in memory even if the spool fails or is full; it counts that.
		_ = w.o.Spool.AppendFrame(encoded.b)
	}
	w.queue = append(w.queue, r)
	w.accepted++
	depth := len(w.queue)
	w.metrics.depth(depth)
	w.mu.Unlock()
	// After the final record is spooled and queued: FlushAnswered, seeing
	// the hold go, then flushes a queue that has it.
	w.Release(r.RequestID)
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

// FlushAnswered is Flush for every answer released so far: it first waits
// until the request of each record held at the call has ended (its final
// record queued, or the hold let go), then until the records queued by then
// are written. A client that has its answer can then read its request in
// the ledger, although the request's end (Done) may come after the answer's
// last byte.
func (w *Writer) FlushAnswered(ctx context.Context) error {
	w.hmu.Lock()
	waiting := make([]string, 0, len(w.held))
	for id := range w.held {
		waiting = append(waiting, id)
	}
	w.holdWaiters++
	w.hmu.Unlock()
	defer func() {
		w.hmu.Lock()
		w.holdWaiters--
		w.hmu.Unlock()
	}()
	for {
		w.hmu.Lock()
		waiting = slices.DeleteFunc(waiting, func(id string) bool {
			_, still := w.held[id]
			return !still
		})
		released := w.released
		w.hmu.Unlock()
		if len(waiting) == 0 {
			return w.Flush(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ledger: flush: %d answered requests not ended yet: %w", len(waiting), ctx.Err())
		case <-released:
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
	if w.o.Spool != nil {
		w.log.Warn("ledger closed with usage records unwritten: they stay in the spool for the next start", slog.Int("records", left))
		w.lost = fmt.Errorf("ledger: closed with %d records unwritten (spooled): %w", left, err)
	} else {
		w.metrics.drop(DropClosed, left)
		w.log.Error("ledger closed with usage records unwritten", slog.Int("dropped", left))
		w.lost = fmt.Errorf("ledger: closed with %d records unwritten: %w", left, err)
	}
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
	if w.o.Spool != nil {
		if err := w.o.Spool.Ack(n); err != nil {
			// They are written: at worst the next start writes them again,
			// and the ledger skips them.
			w.log.Warn("ledger: marking written records in the spool", slog.Any("error", err))
		}
	}
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
