package ledger

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
)

// migrationFiles holds one directory of numbered SQL files per engine.
//
//go:embed migrations
var migrationFiles embed.FS

// migration is one numbered step of the schema.
type migration struct {
	version int
	name    string
	sql     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// loadMigrations reads the migrations in dir of fsys. Files are named
// NNNN_name.sql and numbered 1, 2, 3… without gaps, so that a version number
// says exactly which steps a database has taken.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries { // ReadDir sorts by name
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			return nil, fmt.Errorf("migration %s: want a file named NNNN_name.sql", path.Join(dir, e.Name()))
		}
		version, _ := strconv.Atoi(m[1])
		if version != len(ms)+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d", path.Join(dir, e.Name()), version, len(ms)+1)
		}
		text, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: version, name: m[2], sql: string(text)})
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("migrations %s: none found", dir)
	}
	return ms, nil
}

// migrate brings db up to the last of ms and returns the schema version it
// is at. Each step runs in its own transaction together with its row in
// ledger_schema_version, so a failed step leaves the schema at the step
// before. Concurrent openers are serialised by the dialect's lock (SQLite's
// write lock, PostgreSQL's advisory lock), so each step runs once.
//
// A database at a later version than ms knows is left alone: migrations only
// add, so an older build keeps working during a rolling upgrade.
func migrate(ctx context.Context, db *sql.DB, d *dialect, ms []migration) (int, error) {
	version := 0
	for _, m := range ms {
		v, err := step(ctx, db, d, m)
		if err != nil {
			return 0, fmt.Errorf("ledger: migration %04d_%s: %w", m.version, m.name, err)
		}
		version = v
	}
	return version, nil
}

// step applies m unless the database already has it, and returns the
// schema version after it.
func step(ctx context.Context, db *sql.DB, d *dialect, m migration) (version int, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	if d.lock != "" {
		if _, err := tx.ExecContext(ctx, d.lock); err != nil {
			return 0, err
		}
	}
	if _, err := tx.ExecContext(ctx, d.versionTable); err != nil {
		return 0, err
	}
	if version, err = schemaVersion(ctx, tx); err != nil {
		return 0, err
	}
	if version >= m.version {
		return version, tx.Commit()
	}
	if version != m.version-1 {
		return 0, fmt.Errorf("schema is at version %d", version)
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO ledger_schema_version (version, name) VALUES ("+
		d.param(1)+", "+d.param(2)+")", m.version, m.name); err != nil {
		return 0, err
	}
	return m.version, tx.Commit()
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM ledger_schema_version`).Scan(&v)
	return v, err
}

// ignoreDone drops the error of rolling back a transaction that has already
// ended.
func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}
