package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/switchyard/switchyard/state/ledger/pgtest"
)

// The PostgreSQL tests run a real server: a throwaway cluster initialised
// once into pgTemplate, copied for each cluster a test starts, and shared
// by all tests but the outage test, which stops its own.
var (
	pgTemplate string
	sharedPG   *pgtest.Cluster
	errPG      error // why there is no shared cluster
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	errPG = startSharedPG()
	code := m.Run()
	if sharedPG != nil {
		if err := sharedPG.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = os.RemoveAll(sharedPG.Dir)
	}
	if pgTemplate != "" {
		_ = os.RemoveAll(pgTemplate)
	}
	os.Exit(code)
}

// newPGCluster copies the template into a cluster of its own.
func newPGCluster() (*pgtest.Cluster, error) {
	if pgTemplate == "" {
		return nil, errPG
	}
	return pgtest.NewCluster(pgTemplate)
}

func startSharedPG() error {
	dir, err := pgtest.InitTemplate()
	if err != nil {
		return err
	}
	pgTemplate = dir
	c, err := newPGCluster()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		_ = os.RemoveAll(c.Dir)
		return err
	}
	sharedPG = c
	return nil
}

// engine is one database the conformance suite runs on.
type engine struct {
	name    string
	dialect *dialect
	// fresh returns the Config of an empty ledger of this engine.
	fresh func(tb testing.TB) Config
	// raw opens cfg's database without migrating it.
	raw func(cfg Config) (*sql.DB, error)
}

var engines = []engine{
	{
		name:    DriverSQLite,
		dialect: sqliteDialect,
		fresh: func(tb testing.TB) Config {
			return Config{Driver: DriverSQLite, DSN: filepath.Join(tb.TempDir(), "usage.db")}
		},
		raw: func(cfg Config) (*sql.DB, error) { return sqliteDB(cfg.DSN, cfg.BusyTimeout) },
	},
	{
		name:    DriverPostgres,
		dialect: postgresDialect,
		fresh: func(tb testing.TB) Config {
			tb.Helper()
			if sharedPG == nil {
				tb.Fatal(errPG)
			}
			dsn, err := sharedPG.CreateDatabase(tb.Context())
			if err != nil {
				tb.Fatal(err)
			}
			return Config{Driver: DriverPostgres, DSN: dsn}
		},
		raw: func(cfg Config) (*sql.DB, error) { return postgresDB(cfg.DSN) },
	},
}

// forEachEngine runs test once on each engine, with an empty ledger.
func forEachEngine(t *testing.T, test func(t *testing.T, e engine, cfg Config)) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			test(t, e, e.fresh(t))
		})
	}
}

func mustOpen(t *testing.T, cfg Config) *DB {
	t.Helper()
	db, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// count returns how many rows the ledger holds.
func count(t *testing.T, db *DB) int64 {
	t.Helper()
	rows, err := db.Query(context.Background(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return rows[0].Requests
}

// eventually waits for cond, failing the test if it has not held within a
// minute. It bounds a wait; it asserts nothing about time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLogger logs to the test's output, shown when it fails or with -v.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), nil))
}

// metricValue reads one counter or gauge.
func metricValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
