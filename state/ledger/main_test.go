package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The PostgreSQL tests run a real server: a throwaway cluster initialised
// once into pgTemplate, copied for each cluster a test starts, and shared
// by all tests but the outage test, which stops its own.
var (
	pgTemplate string
	sharedPG   *pgCluster
	errPG      error // why there is no shared cluster
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	errPG = startSharedPG()
	code := m.Run()
	if sharedPG != nil {
		if err := sharedPG.stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = os.RemoveAll(sharedPG.dir)
	}
	if pgTemplate != "" {
		_ = os.RemoveAll(pgTemplate)
	}
	os.Exit(code)
}

func startSharedPG() error {
	dir, err := initTemplate()
	if err != nil {
		return err
	}
	pgTemplate = dir
	c, err := newPGCluster()
	if err != nil {
		return err
	}
	if err := c.start(); err != nil {
		_ = os.RemoveAll(c.dir)
		return err
	}
	sharedPG = c
	return nil
}

// pgBinDir finds initdb and pg_ctl: SWITCHYARD_PG_BIN, else the newest
// Debian server package, else PATH.
func pgBinDir() (string, error) {
	if dir := os.Getenv("SWITCHYARD_PG_BIN"); dir != "" {
		return dir, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	slices.SortFunc(found, func(a, b string) int { return pgMajor(b) - pgMajor(a) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("the PostgreSQL tests need the PostgreSQL server binaries (initdb, pg_ctl, postgres): " +
		"install them with `apt-get install -y postgresql` (Debian), or set SWITCHYARD_PG_BIN to their directory")
}

func pgMajor(path string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return n
}

// serverUser is the account the server runs as: PostgreSQL refuses to run
// as root, so root hands it to the postgres (or nobody) account.
func serverUser() (*user.User, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		if u, err := user.Lookup(name); err == nil {
			return u, nil
		}
	}
	return nil, errors.New("running as root, and neither a postgres nor a nobody account exists to run PostgreSQL")
}

// pgCommand runs a PostgreSQL program as the server's account.
func pgCommand(name string, args ...string) (*exec.Cmd, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	u, err := serverUser()
	if err != nil {
		return nil, err
	}
	prog := filepath.Join(bin, name)
	if u == nil {
		return exec.Command(prog, args...), nil
	}
	return exec.Command("runuser", append([]string{"-u", u.Username, "--", prog}, args...)...), nil
}

func runPG(name string, args ...string) error {
	cmd, err := pgCommand(name, args...)
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// ownedTempDir makes a directory that the server's account owns.
func ownedTempDir(pattern string) (string, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	u, err := serverUser()
	if err != nil || u == nil {
		return dir, err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return dir, os.Chown(dir, uid, gid)
}

func initTemplate() (string, error) {
	dir, err := ownedTempDir("ledger-pg-template-")
	if err != nil {
		return "", err
	}
	err = runPG("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// pgCluster is one PostgreSQL server on a free port of 127.0.0.1.
type pgCluster struct {
	dir  string // holds data/, the socket and server.log
	port int
}

func newPGCluster() (*pgCluster, error) {
	if pgTemplate == "" {
		return nil, errPG
	}
	dir, err := ownedTempDir("ledger-pg-")
	if err != nil {
		return nil, err
	}
	// cp -a keeps the owner, and PostgreSQL insists on owning its data.
	if out, err := exec.Command("cp", "-a", filepath.Join(pgTemplate, "data"), dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy the template cluster: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &pgCluster{dir: dir, port: port}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs the server and waits until it takes connections. Durability
// is off: these tests crash clients, not the server.
func (c *pgCluster) start() error {
	return runPG("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "server.log"),
		"-w", "-t", "60", "-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off "+
			"-c synchronous_commit=off -c full_page_writes=off", c.port, c.dir), "start")
}

// stop shuts the server down, ending every connection at once.
func (c *pgCluster) stop() error {
	return runPG("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "-t", "60", "stop")
}

func (c *pgCluster) dsn(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, database)
}

var databases atomic.Int64

// createDatabase makes an empty database and returns its DSN.
func (c *pgCluster) createDatabase(ctx context.Context) (string, error) {
	admin, err := sql.Open("pgx", c.dsn("postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close()
	name := fmt.Sprintf("ledger_%d", databases.Add(1))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.dsn(name), nil
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
			dsn, err := sharedPG.createDatabase(tb.Context())
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
