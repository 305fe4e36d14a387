package ledger

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// outage makes a real database unavailable to the writer and brings it
// back.
type outage struct {
	name  string
	setup func(t *testing.T) (cfg Config, begin, end func())
}

var outages = []outage{
	{
		// PostgreSQL stops: connections break and new ones are refused.
		name: DriverPostgres,
		setup: func(t *testing.T) (Config, func(), func()) {
			c, err := newPGCluster()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Stop(); _ = os.RemoveAll(c.Dir) })
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			dsn, err := c.CreateDatabase(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			act := func(f func() error) func() {
				return func() {
					if err := f(); err != nil {
						t.Fatal(err)
					}
				}
			}
			return Config{Driver: DriverPostgres, DSN: dsn}, act(c.Stop), act(c.Start)
		},
	},
	{
		// Another process holds SQLite's write lock past the busy timeout.
		// (Making the file read-only would not do: the tests may run as
		// root, which writes regardless.)
		name: DriverSQLite,
		setup: func(t *testing.T) (Config, func(), func()) {
			cfg := Config{Driver: DriverSQLite, DSN: filepath.Join(t.TempDir(), "usage.db"), BusyTimeout: 20 * time.Millisecond}
			var holder *sql.DB
			var lock *sql.Tx
			begin := func() {
				var err error
				if holder, err = sqliteDB(cfg.DSN, time.Second); err != nil {
					t.Fatal(err)
				}
				if lock, err = holder.BeginTx(t.Context(), nil); err != nil { // BEGIN IMMEDIATE
					t.Fatal(err)
				}
				// Hold the lock with a write that is never committed.
				if _, err := lock.ExecContext(t.Context(), "DELETE FROM usage_records WHERE request_id = ''"); err != nil {
					t.Fatal(err)
				}
			}
			end := func() {
				if err := errors.Join(lock.Rollback(), holder.Close()); err != nil {
					t.Fatal(err)
				}
			}
			return cfg, begin, end
		},
	},
}

// TestWriterOutage writes through a real outage of each engine: records
// wait in the writer while the database is gone, none is dropped, and once
// it is back each is written exactly once.
func TestWriterOutage(t *testing.T) {
	for _, o := range outages {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			cfg, begin, end := o.setup(t)
			db := mustOpen(t, cfg)
			m := NewMetrics(nil)
			w := NewWriter(db, WriterOptions{
				BatchSize: 20, FlushInterval: time.Millisecond, Metrics: m, Logger: testLogger(t),
				MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, WriteTimeout: 5 * time.Second,
			})
			rs := genRecords(300, 20)
			for _, r := range rs[:100] {
				w.Write(r)
			}
			flush(t, w)

			begin()
			for _, r := range rs[100:] {
				w.Write(r)
			}
			eventually(t, "the writer to fail twice", func() bool {
				return metricValue(t, m.errors.WithLabelValues("unavailable")) >= 2
			})
			if got := w.Len(); got != 200 {
				t.Errorf("queued during the outage: got %d, want 200", got)
			}
			end()

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := w.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if got := count(t, db); got != 300 {
				t.Errorf("rows: got %d, want 300", got)
			}
			if got := metricValue(t, m.written) + metricValue(t, m.duplicates); got != 300 {
				t.Errorf("records written or found written: got %v, want 300", got)
			}
			for _, reason := range []string{DropBufferFull, DropRefused, DropInvalid, DropClosed} {
				if got := metricValue(t, m.dropped.WithLabelValues(reason)); got != 0 {
					t.Errorf("dropped (%s): got %v, want 0", reason, got)
				}
			}
			got, err := db.Query(t.Context(), Filter{}, ByTenant, ByApp)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(sumBy(normalizedAll(rs), Filter{}, []Dimension{ByTenant, ByApp}), got); d != "" {
				t.Errorf("totals after the outage (-want +got):\n%s", d)
			}
		})
	}
}

// TestWriterOverflowDuringOutage: an outage longer than the buffer holds
// drops records past the bound, and counts exactly those.
func TestWriterOverflowDuringOutage(t *testing.T) {
	cfg, begin, end := outages[1].setup(t) // SQLite: the quicker outage to stage
	db := mustOpen(t, cfg)
	m := NewMetrics(nil)
	w := NewWriter(db, WriterOptions{BatchSize: 10, Capacity: 50, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		Metrics: m, Logger: testLogger(t)})
	rs := genRecords(80, 21)
	begin()
	for _, r := range rs {
		w.Write(r)
	}
	end()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := metricValue(t, m.dropped.WithLabelValues(DropBufferFull))
	if got := count(t, db); got != 50 || dropped != 30 {
		t.Errorf("got %d rows and %v dropped, want 50 and 30", got, dropped)
	}
}
