// Package pgtest runs throwaway PostgreSQL servers for tests: the ledger's
// conformance and outage tests, and the gateway's chaos cases. The server
// binaries are found under /usr/lib/postgresql/*/bin, on PATH, or in
// $SWITCHYARD_PG_BIN; as root the server runs as postgres (or nobody).
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver
)

// pgBinDir finds initdb and pg_ctl: SWITCHYARD_PG_BIN, else the newest
// Debian server package, else PATH.
func binDir() (string, error) {
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
func command(name string, args ...string) (*exec.Cmd, error) {
	bin, err := binDir()
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

func run(name string, args ...string) error {
	cmd, err := command(name, args...)
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

// InitTemplate initialises a cluster once into a new directory, for
// NewCluster to copy.
func InitTemplate() (string, error) {
	dir, err := ownedTempDir("ledger-pg-template-")
	if err != nil {
		return "", err
	}
	err = run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// Cluster is one PostgreSQL server on a free port of 127.0.0.1.
type Cluster struct {
	Dir  string // holds data/, the socket and server.log
	Port int
}

// NewCluster copies the template cluster into a new directory; Start runs
// it.
func NewCluster(template string) (*Cluster, error) {
	dir, err := ownedTempDir("ledger-pg-")
	if err != nil {
		return nil, err
	}
	// cp -a keeps the owner, and PostgreSQL insists on owning its data.
	if out, err := exec.Command("cp", "-a", filepath.Join(template, "data"), dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy the template cluster: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &Cluster{Dir: dir, Port: port}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs the server and waits until it takes connections. Durability
// is off: tests crash clients, not the server.
func (c *Cluster) Start() error {
	return run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-l", filepath.Join(c.Dir, "server.log"),
		"-w", "-t", "60", "-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off "+
			"-c synchronous_commit=off -c full_page_writes=off", c.Port, c.Dir), "start")
}

// Stop shuts the server down, ending every connection at once.
func (c *Cluster) Stop() error {
	return run("pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "fast", "-w", "-t", "60", "stop")
}

// DSN is the URL of database on the cluster.
func (c *Cluster) DSN(database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, database)
}

var databases atomic.Int64

// CreateDatabase makes an empty database and returns its DSN.
func (c *Cluster) CreateDatabase(ctx context.Context) (string, error) {
	admin, err := sql.Open("pgx", c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer admin.Close()
	name := fmt.Sprintf("ledger_%d", databases.Add(1))
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.DSN(name), nil
}
