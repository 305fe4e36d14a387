package ledger

import (
	"path/filepath"
	"testing"
)

// TestSQLiteConnectionSettings reads back what every connection of an
// embedded ledger is opened with. temp_store=memory keeps the statement
// journal of each multi-row insert (ON CONFLICT may undo one statement of a
// batch) in memory: on disk it was a write system call a page, and more
// than a third of an insert's CPU (BenchmarkInsert).
func TestSQLiteConnectionSettings(t *testing.T) {
	db, err := OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "ledger.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Several connections at once, so that each is a connection of its own.
	db.db.SetMaxIdleConns(3)
	conns := make([]interface{ Close() error }, 3)
	for i := range conns {
		c, err := db.db.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		for pragma, want := range map[string]string{
			"temp_store":   "2",
			"synchronous":  "1",
			"journal_mode": "wal",
			"busy_timeout": "5000",
		} {
			var got string
			if err := c.QueryRowContext(t.Context(), "PRAGMA "+pragma).Scan(&got); err != nil {
				t.Fatalf("connection %d: PRAGMA %s: %v", i, pragma, err)
			}
			if got != want {
				t.Errorf("connection %d: PRAGMA %s = %s, want %s", i, pragma, got, want)
			}
		}
	}
	for _, c := range conns {
		c.Close()
	}
}
