package ledger

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestDeferredOpensWhenTheDatabaseComes: with PostgreSQL down, the
// deferred ledger answers ErrUnavailable (so a writer keeps its records)
// instead of failing to start; once the server is up it opens, migrates,
// and a writer behind it writes what it kept.
func TestDeferredOpensWhenTheDatabaseComes(t *testing.T) {
	c, err := newPGCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(); _ = os.RemoveAll(c.Dir) })
	cfg := Config{Driver: DriverPostgres, DSN: c.DSN("postgres")}

	d, err := OpenDeferred(t.Context(), cfg, 10*time.Millisecond, 50*time.Millisecond, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Insert(t.Context(), genRecords(1, 31)); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Insert with the server down: %v, want ErrUnavailable", err)
	}
	if err := d.Ping(t.Context()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Ping with the server down: %v, want ErrUnavailable", err)
	}
	w, _, _ := newTestWriter(t, d, WriterOptions{BatchSize: 10, FlushInterval: 10 * time.Millisecond})
	rs := genRecords(25, 32)
	for _, r := range rs {
		w.Write(r)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Opened():
	case <-time.After(time.Minute):
		t.Fatal("the ledger did not open within a minute of the server starting")
	}
	flush(t, w)
	rows, err := d.Query(t.Context(), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Requests != int64(len(rs)) {
		t.Errorf("ledger holds %d rows, want %d", rows[0].Requests, len(rs))
	}
}

// TestDeferredRefusesWhatNoRetryMends: a configuration that can never open
// fails at once.
func TestDeferredRefusesWhatNoRetryMends(t *testing.T) {
	for _, c := range []Config{
		{Driver: "mysql"},
		{Driver: DriverPostgres},
		{Driver: DriverPostgres, DSN: "postgres://%zz"},
	} {
		if d, err := OpenDeferred(t.Context(), c, time.Millisecond, time.Millisecond, testLogger(t)); err == nil {
			_ = d.Close()
			t.Errorf("%+v: opened, want an error", c)
		}
	}
}
