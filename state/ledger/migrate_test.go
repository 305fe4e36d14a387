package ledger

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestLoadMigrations(t *testing.T) {
	file := func(text string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(text)} }
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		want    []migration
		wantErr string
	}{
		{
			name: "in order",
			fsys: fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A")},
			want: []migration{{1, "a", "A"}, {2, "b", "B"}},
		},
		{name: "gap", fsys: fstest.MapFS{"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")}, wantErr: "m/0003_c.sql: version 3, want 2"},
		{name: "same version twice", fsys: fstest.MapFS{"m/0001_a.sql": file("A"), "m/0001_b.sql": file("B")}, wantErr: "m/0001_b.sql: version 1, want 2"},
		{name: "not starting at one", fsys: fstest.MapFS{"m/0002_b.sql": file("B")}, wantErr: "version 2, want 1"},
		{name: "bad name", fsys: fstest.MapFS{"m/1_a.sql": file("A")}, wantErr: "m/1_a.sql: want a file named NNNN_name.sql"},
		{name: "stray file", fsys: fstest.MapFS{"m/0001_a.sql": file("A"), "m/README": file("")}, wantErr: "m/README: want"},
		{name: "empty", fsys: fstest.MapFS{"m/.keep": nil}, wantErr: "m/.keep: want"},
		{name: "missing", fsys: fstest.MapFS{}, wantErr: "m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := loadMigrations(tt.fsys, "m")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(migration{})); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestShippedMigrationsMatch keeps the engines' migration sets in step: the
// same steps, under the same names.
func TestShippedMigrationsMatch(t *testing.T) {
	names := map[string][]string{}
	for _, e := range engines {
		ms, err := loadMigrations(migrationFiles, e.dialect.migrations)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			names[e.name] = append(names[e.name], m.name)
		}
	}
	if d := cmp.Diff(names[DriverSQLite], names[DriverPostgres]); d != "" {
		t.Errorf("migrations (-sqlite +postgres):\n%s", d)
	}
}

func latestVersion(t *testing.T, d *dialect) int {
	t.Helper()
	ms, err := loadMigrations(migrationFiles, d.migrations)
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

func versionRows(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM ledger_schema_version`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestOpenTwiceChangesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, cfg Config) {
		latest := latestVersion(t, e.dialect)
		db := mustOpen(t, cfg)
		if _, err := db.Insert(t.Context(), genRecords(5, 5)); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		again := mustOpen(t, cfg)
		if got := again.SchemaVersion(); got != latest {
			t.Errorf("schema version: got %d, want %d", got, latest)
		}
		if got := versionRows(t, again.db); got != latest {
			t.Errorf("ledger_schema_version rows: got %d, want %d", got, latest)
		}
		if got := count(t, again); got != 5 {
			t.Errorf("rows after reopening: got %d, want 5", got)
		}
	})
}

// TestOpenConcurrently opens one new database from several openers at once,
// as replicas starting together do: each migration runs once.
func TestOpenConcurrently(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, cfg Config) {
		const openers = 4
		dbs := make([]*DB, openers)
		errs := make([]error, openers)
		var wg sync.WaitGroup
		for i := range openers {
			wg.Go(func() { dbs[i], errs[i] = Open(t.Context(), cfg) })
		}
		wg.Wait()
		for i := range openers {
			if errs[i] != nil {
				t.Fatalf("opener %d: %v", i, errs[i])
			}
			t.Cleanup(func() { _ = dbs[i].Close() })
		}
		if got, want := versionRows(t, dbs[0].db), latestVersion(t, e.dialect); got != want {
			t.Errorf("ledger_schema_version rows: got %d, want %d", got, want)
		}
	})
}

// TestUpgradeFromVersion1 takes a ledger written at schema version 1 (the
// table without its indexes) to the latest version; its rows stay and the
// queries use the new indexes.
func TestUpgradeFromVersion1(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, cfg Config) {
		ms, err := loadMigrations(migrationFiles, e.dialect.migrations)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := e.raw(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := migrate(t.Context(), raw, e.dialect, ms[:1]); err != nil || v != 1 {
			t.Fatalf("migrate to version 1: got %d, %v", v, err)
		}
		old := &DB{db: raw, d: e.dialect, version: 1}
		rs := genRecords(50, 6)
		insertAtVersion1(t, old, rs)
		for i := range rs {
			// Version 1 has neither saved_micro_usd nor price_source: its
			// rows read back saving nothing, priced from nowhere said.
			rs[i].SavedMicros, rs[i].PriceSource = 0, ""
		}
		if got := indexes(t, e, raw); len(got) != 0 {
			t.Fatalf("indexes at version 1: got %v, want none", got)
		}
		if err := raw.Close(); err != nil {
			t.Fatal(err)
		}

		db := mustOpen(t, cfg)
		if got, want := db.SchemaVersion(), len(ms); got != want {
			t.Errorf("schema version: got %d, want %d", got, want)
		}
		want := []string{"usage_records_model_time", "usage_records_session_time", "usage_records_tenant_app_time", "usage_records_time"}
		if d := cmp.Diff(want, indexes(t, e, db.db)); d != "" {
			t.Errorf("indexes (-want +got):\n%s", d)
		}
		got, err := db.Query(t.Context(), Filter{}, ByTenant)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(sumBy(normalizedAll(rs), Filter{}, []Dimension{ByTenant}), got); d != "" {
			t.Errorf("totals after the upgrade (-want +got):\n%s", d)
		}
		for r, err := range db.Records(t.Context(), Filter{}) {
			if err != nil || r.UsageEstimated || r.PriceSource != "" || r.Tags != nil || r.SessionID != "" {
				t.Fatalf("a row written at version 1 reads back with usage_estimated %v, price_source %q, tags %v, session %q, %v; want false and nothing",
					r.UsageEstimated, r.PriceSource, r.Tags, r.SessionID, err)
			}
		}
	})
}

// indexes lists the secondary indexes of usage_records by name.
func indexes(t *testing.T, e engine, db *sql.DB) []string {
	t.Helper()
	q := map[string]string{
		DriverSQLite: `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage_records'
			AND sql IS NOT NULL ORDER BY name`,
		DriverPostgres: `SELECT indexname FROM pg_indexes WHERE tablename = 'usage_records'
			AND indexname <> 'usage_records_pkey' ORDER BY indexname`,
	}[e.name]
	rows, err := db.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// TestFailedMigrationLeavesPreviousVersion runs a second step that fails
// halfway: its first statement is undone with it and the schema stays at
// version 1, so fixing the step and opening again completes the upgrade.
func TestFailedMigrationLeavesPreviousVersion(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, cfg Config) {
		raw, err := e.raw(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = raw.Close() })
		ctx := context.Background()
		ms := []migration{
			{1, "one", "CREATE TABLE one (id INTEGER)"},
			{2, "two", "CREATE TABLE two (id INTEGER); INSERT INTO missing VALUES (1)"},
		}
		if _, err := migrate(ctx, raw, e.dialect, ms); err == nil || !strings.Contains(err.Error(), "0002_two") {
			t.Fatalf("migrate: got %v, want an error naming 0002_two", err)
		}
		if v, err := schemaVersion(ctx, raw); err != nil || v != 1 {
			t.Errorf("schema version: got %d, %v; want 1", v, err)
		}
		if _, err := raw.ExecContext(ctx, "SELECT id FROM two"); err == nil {
			t.Error("table two exists: the failed step was not rolled back")
		}
		ms[1].sql = "CREATE TABLE two (id INTEGER)"
		if v, err := migrate(ctx, raw, e.dialect, ms); err != nil || v != 2 {
			t.Errorf("migrate after the fix: got %d, %v; want 2", v, err)
		}
	})
}

func TestOpenConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "unknown driver", cfg: Config{Driver: "mysql"}, wantErr: `unknown driver "mysql"`},
		{name: "postgres without dsn", cfg: Config{Driver: DriverPostgres}, wantErr: "needs a dsn"},
		{name: "sqlite uri", cfg: Config{DSN: "file:x.db?mode=ro"}, wantErr: "want a file path"},
		{
			name:    "postgres dsn that does not parse hides it",
			cfg:     Config{Driver: DriverPostgres, DSN: "postgres://u:s3cret@h:notaport/db"},
			wantErr: "does not parse (not shown",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := Open(t.Context(), tt.cfg)
			if err == nil {
				_ = db.Close()
				t.Fatalf("got no error, want one containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("got %q, want it to contain %q and no password", err, tt.wantErr)
			}
		})
	}
	t.Run("sqlite default path", func(t *testing.T) {
		t.Chdir(t.TempDir())
		db, err := Open(t.Context(), Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if db.Driver() != DriverSQLite {
			t.Errorf("driver: got %q, want %q", db.Driver(), DriverSQLite)
		}
		if _, err := db.Insert(t.Context(), genRecords(1, 7)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestNewerSchemaIsLeftAlone: a build that knows fewer migrations than the
// database has taken (an older replica during a rolling upgrade) opens it
// without touching it.
func TestNewerSchemaIsLeftAlone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e engine, cfg Config) {
		raw, err := e.raw(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = raw.Close() })
		ms := []migration{{1, "one", "CREATE TABLE one (id INTEGER)"}, {2, "two", "CREATE TABLE two (id INTEGER)"}}
		if _, err := migrate(t.Context(), raw, e.dialect, ms); err != nil {
			t.Fatal(err)
		}
		if v, err := migrate(t.Context(), raw, e.dialect, ms[:1]); err != nil || v != 2 {
			t.Errorf("migrate with the first step only: got %d, %v; want 2, nil", v, err)
		}
		if got := versionRows(t, raw); got != 2 {
			t.Errorf("ledger_schema_version rows: got %d, want 2", got)
		}
	})
}

// version1Columns is how many of insertColumns schema version 1 had; later
// steps only ever append columns.
const version1Columns = 22

// insertAtVersion1 writes records as a build at schema version 1 did, with
// the columns it knew.
func insertAtVersion1(t *testing.T, db *DB, rs []Record) {
	t.Helper()
	cols := insertColumns[:version1Columns]
	for i := range rs {
		r := rs[i].normalized()
		v, err := db.values(&r)
		if err != nil {
			t.Fatal(err)
		}
		params := make([]string, len(cols))
		for j := range params {
			params[j] = db.d.param(j + 1)
		}
		q := "INSERT INTO usage_records (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(params, ", ") + ")"
		if _, err := db.db.ExecContext(t.Context(), q, v[:len(cols)]...); err != nil {
			t.Fatal(err)
		}
	}
}
