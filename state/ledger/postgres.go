package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// migrationLock is the key of the advisory lock that keeps replicas opening
// the ledger at once from migrating it twice.
const migrationLock = 0x5377_4c65_6467 // "SwLedg"

var postgresDialect = &dialect{
	name:       DriverPostgres,
	migrations: "migrations/postgres",
	versionTable: `CREATE TABLE IF NOT EXISTS ledger_schema_version (
		version    INTEGER     PRIMARY KEY,
		name       TEXT        NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
	)`,
	lock:      fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", migrationLock),
	param:     func(i int) string { return "$" + strconv.Itoa(i) },
	timeValue: func(t time.Time) any { return t },
	refused: func(err error) bool {
		var e *pgconn.PgError
		if !errors.As(err, &e) || len(e.Code) < 2 {
			return false
		}
		// Class 22 is bad data, class 23 a violated constraint; everything
		// else (connections, resources, shutdown, serialisation) can pass.
		return e.Code[:2] == "22" || e.Code[:2] == "23"
	},
}

// OpenPostgres connects to the PostgreSQL database dsn names (a URL or a
// key=value string) and brings the ledger's schema up to date.
//
// It goes through database/sql with pgx's stdlib driver rather than pgxpool
// so that both engines share one implementation: the ledger's statements are
// a few batched inserts and aggregate queries, which gain nothing from pgx's
// native interface, and database/sql's pool replaces broken connections
// after an outage by itself.
func OpenPostgres(ctx context.Context, dsn string) (*DB, error) {
	db, err := postgresDB(dsn)
	if err != nil {
		return nil, err
	}
	return open(ctx, db, postgresDialect)
}

func postgresDB(dsn string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// The parse error quotes the DSN and masks passwords only as best
		// it can.
		return nil, errors.New("ledger: the postgres dsn does not parse (not shown: it may hold a password)")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second // an outage must fail a write, not hang it
	}
	db := sql.OpenDB(stdlib.GetConnector(*cfg))
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	return db, nil
}
