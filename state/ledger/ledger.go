package ledger

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"
)

// Sink takes usage records: the ledger's database, or the usage events
// stream. A [Writer] batches records into one.
type Sink interface {
	// Insert writes records in one transaction and returns how many were new:
	// a record whose RequestID is already there is skipped, not counted
	// twice. An error that matches ErrUnavailable means the sink could not
	// take the write now and nothing was written; retrying later is safe.
	// Any other error means the sink refused the data.
	Insert(ctx context.Context, records []Record) (int, error)
}

// Ledger is where usage records are kept and summed.
type Ledger interface {
	Sink
	// Query sums the records f selects, one Row per distinct combination of
	// the dimensions, ordered by them. Without dimensions it returns a
	// single Row of totals, zero when nothing matches.
	Query(ctx context.Context, f Filter, by ...Dimension) ([]Row, error)
	// Records yields the records f selects, oldest first.
	Records(ctx context.Context, f Filter) iter.Seq2[Record, error]
	// Rate records the rating of a request, once: a request rated before
	// is ErrAlreadyRated. The caller checks that the request is in the
	// ledger and whose it is.
	Rate(ctx context.Context, r Rating) error
	// Quality sums, per route, tenant and model of the records f selects,
	// the ratings and what auto routing cost against the strongest model.
	Quality(ctx context.Context, f Filter) ([]Quality, error)
	// Ping reports whether the database can be reached.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// ErrUnavailable marks a failure of the database rather than of the data: it
// could not be reached, was locked, read-only or out of space, or the call
// ran out of time. Writing the same records later may succeed.
var ErrUnavailable = errors.New("ledger unavailable")

// Drivers that Open accepts.
const (
	DriverSQLite   = "sqlite"
	DriverPostgres = "postgres"
)

// DefaultSQLitePath is where Open keeps the SQLite ledger when Config names
// no DSN: beside the other run-time state of a local gateway.
const DefaultSQLitePath = ".run/usage.db"

// Config chooses the ledger's database. It is what the policy's ledger
// section holds.
type Config struct {
	// Driver is DriverSQLite (the default) or DriverPostgres.
	Driver string
	// DSN is, for SQLite, the database file's path (default
	// DefaultSQLitePath; its directory is created); for PostgreSQL, a
	// connection URL or key=value string as libpq accepts.
	DSN string
	// BusyTimeout is how long a SQLite write waits for another writer's
	// lock before the ledger reports itself unavailable (default 5s).
	BusyTimeout time.Duration
}

// Open opens the ledger c describes and brings its schema up to date.
func Open(ctx context.Context, c Config) (*DB, error) {
	switch c.Driver {
	case "", DriverSQLite:
		path := c.DSN
		if path == "" {
			path = DefaultSQLitePath
		}
		return OpenSQLite(ctx, path, c.BusyTimeout)
	case DriverPostgres:
		if c.DSN == "" {
			return nil, errors.New("ledger: the postgres driver needs a dsn")
		}
		return OpenPostgres(ctx, c.DSN)
	}
	return nil, fmt.Errorf("ledger: unknown driver %q (want %q or %q)", c.Driver, DriverSQLite, DriverPostgres)
}
