package ledger

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Deferred is a Ledger whose database may not be reachable yet: it opens
// it in the background, retrying with backoff, and until it has, every
// call fails with ErrUnavailable. Behind a Writer this means a gateway
// starts and serves while its database is down: the writer keeps the
// records (and its spool) and writes them once the database is there.
type Deferred struct {
	c      Config
	log    *slog.Logger
	stop   context.CancelFunc
	opened chan struct{} // closed once db is set

	mu      sync.Mutex
	db      *DB
	lastErr error
}

// OpenDeferred opens the ledger c describes, as Open does, but does not
// fail when the database cannot be reached: it returns a Deferred that
// keeps trying (from every min up to every max) until it can, or until
// Close. The first try is made before it returns.
// A configuration that can never open (an unknown driver, a DSN that does
// not parse) is an error at once.
func OpenDeferred(ctx context.Context, c Config, minWait, maxWait time.Duration, log *slog.Logger) (*Deferred, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	d := &Deferred{c: c, log: log, stop: stop, opened: make(chan struct{})}
	if d.try(ctx) {
		return d, nil
	}
	log.Warn("usage ledger unavailable: serving without it, records are kept until it opens",
		slog.String("driver", d.Driver()), slog.String("error", d.err().Error()))
	go d.retry(ctx, minWait, maxWait)
	return d, nil
}

// check finds the errors of c that no retry mends.
func (c Config) check() error {
	switch c.Driver {
	case "", DriverSQLite:
		return nil
	case DriverPostgres:
		if c.DSN == "" {
			return errors.New("ledger: the postgres driver needs a dsn")
		}
		db, err := postgresDB(c.DSN) // parses the DSN, connects to nothing
		if err != nil {
			return err
		}
		return db.Close()
	}
	return fmt.Errorf("ledger: unknown driver %q (want %q or %q)", c.Driver, DriverSQLite, DriverPostgres)
}

func (d *Deferred) try(ctx context.Context) bool {
	db, err := Open(ctx, d.c)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.lastErr = err
		return false
	}
	if ctx.Err() != nil { // closed meanwhile
		_ = db.Close()
		return false
	}
	d.db = db
	close(d.opened)
	return true
}

func (d *Deferred) retry(ctx context.Context, minWait, maxWait time.Duration) {
	wait := minWait
	for attempt := 2; ; attempt++ {
		t := time.NewTimer(wait + rand.N(wait/5+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if d.try(ctx) {
			d.log.Info("usage ledger open", slog.String("driver", d.Driver()), slog.Int("attempt", attempt))
			return
		}
		d.log.Warn("usage ledger still unavailable", slog.Int("attempt", attempt), slog.String("error", d.err().Error()))
		wait = min(2*wait, maxWait)
	}
}

func (d *Deferred) err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// get returns the database, or ErrUnavailable with why it is not open.
func (d *Deferred) get() (*DB, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil, fmt.Errorf("%w: not opened yet: %w", ErrUnavailable, d.lastErr)
	}
	return d.db, nil
}

// Opened is closed once the database is open.
func (d *Deferred) Opened() <-chan struct{} { return d.opened }

// Driver returns the configured driver.
func (d *Deferred) Driver() string {
	if d.c.Driver == "" {
		return DriverSQLite
	}
	return d.c.Driver
}

// Insert implements [Ledger.Insert].
func (d *Deferred) Insert(ctx context.Context, records []Record) (int, error) {
	db, err := d.get()
	if err != nil {
		return 0, err
	}
	return db.Insert(ctx, records)
}

// Query implements [Ledger.Query].
func (d *Deferred) Query(ctx context.Context, f Filter, by ...Dimension) ([]Row, error) {
	db, err := d.get()
	if err != nil {
		return nil, err
	}
	return db.Query(ctx, f, by...)
}

// Records implements [Ledger.Records].
func (d *Deferred) Records(ctx context.Context, f Filter) iter.Seq2[Record, error] {
	db, err := d.get()
	if err != nil {
		return func(yield func(Record, error) bool) { yield(Record{}, err) }
	}
	return db.Records(ctx, f)
}

// Rate implements [Ledger.Rate].
func (d *Deferred) Rate(ctx context.Context, r Rating) error {
	db, err := d.get()
	if err != nil {
		return err
	}
	return db.Rate(ctx, r)
}

// Quality implements [Ledger.Quality].
func (d *Deferred) Quality(ctx context.Context, f Filter) ([]Quality, error) {
	db, err := d.get()
	if err != nil {
		return nil, err
	}
	return db.Quality(ctx, f)
}

// Ping implements [Ledger.Ping].
func (d *Deferred) Ping(ctx context.Context) error {
	db, err := d.get()
	if err != nil {
		return err
	}
	return db.Ping(ctx)
}

var _ Ledger = (*Deferred)(nil)

// Close stops trying and closes the database if it was opened.
func (d *Deferred) Close() error {
	d.stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil {
		return nil
	}
	return d.db.Close()
}
