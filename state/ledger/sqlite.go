package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

const defaultBusyTimeout = 5 * time.Second

var sqliteDialect = &dialect{
	name:       DriverSQLite,
	migrations: "migrations/sqlite",
	versionTable: `CREATE TABLE IF NOT EXISTS ledger_schema_version (
		version    INTEGER PRIMARY KEY NOT NULL,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL DEFAULT (CAST(unixepoch('subsec') * 1000000 AS INTEGER))
	) STRICT`,
	// Plain ? rather than $N: SQLite looks named parameters up in a list,
	// which makes binding a batch quadratic in its size.
	param:     func(int) string { return "?" },
	timeValue: func(t time.Time) any { return t.UnixMicro() },
	refused: func(err error) bool {
		var e *sqlite.Error
		if !errors.As(err, &e) {
			return false
		}
		switch e.Code() & 0xff { // the primary result code
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_RANGE:
			return true
		}
		return false
	},
}

// OpenSQLite opens (creating it and its directory if need be) the SQLite
// ledger at path and brings its schema up to date. The database runs in WAL
// mode, so the usage API reads while the writer writes; every transaction
// takes the write lock at its start and waits up to busyTimeout (5s when
// zero) for another writer to let go.
func OpenSQLite(ctx context.Context, path string, busyTimeout time.Duration) (*DB, error) {
	db, err := sqliteDB(path, busyTimeout)
	if err != nil {
		return nil, err
	}
	if err := useWAL(ctx, db, busyTimeout); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return open(ctx, db, sqliteDialect)
}

// useWAL puts the database in WAL mode, which the file keeps for every
// connection after. It is done once here rather than by each connection's
// DSN because SQLite answers a change of journal mode that meets another
// connection's lock with SQLITE_BUSY at once, without waiting out
// busy_timeout: replicas or processes opening one new ledger together (one
// of them already migrating it) would fail to start. Here the change is
// retried until busyTimeout has passed.
func useWAL(ctx context.Context, db *sql.DB, busyTimeout time.Duration) error {
	if busyTimeout <= 0 {
		busyTimeout = defaultBusyTimeout
	}
	deadline := time.Now().Add(busyTimeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil && !strings.EqualFold(mode, "wal") {
			return fmt.Errorf("ledger: sqlite stays in journal mode %q, want wal", mode)
		}
		if err == nil {
			return nil
		}
		if !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("ledger: sqlite journal mode wal: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ledger: sqlite journal mode wal: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlite3.SQLITE_BUSY
}

func sqliteDB(path string, busyTimeout time.Duration) (*sql.DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("ledger: sqlite dsn %q: want a file path", path)
	}
	if busyTimeout <= 0 {
		busyTimeout = defaultBusyTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	// synchronous=NORMAL is durable against a crash of the process, which is
	// what the ledger must survive; it can lose the last commits to a power
	// cut, in exchange for not syncing on every batch. temp_store=memory
	// keeps each statement's journal (what undoes one multi-row insert of a
	// batch) in memory instead of a temporary file written a page at a
	// time: that file was over a third of an insert's CPU.
	dsn := fmt.Sprintf("%s?_busy_timeout=%d&_synchronous=NORMAL&_txlock=immediate&_pragma=temp_store%%3Dmemory",
		path, busyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return db, nil
}
