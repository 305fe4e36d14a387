package ledger

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
)

// The writer process of TestWriterSurvivesKill is this test binary run
// again with these variables set.
const (
	childEnv      = "LEDGER_TEST_CHILD" // "die" or "finish"
	childDriver   = "LEDGER_TEST_DRIVER"
	childDSN      = "LEDGER_TEST_DSN"
	childRecords  = "LEDGER_TEST_RECORDS"
	crashSeed     = 42
	childAppName  = "ledger_test_child"
	childDieShare = 3 // of 5: the share of the records a "die" child writes
)

// TestWriterSurvivesKill kills a writer process with SIGKILL while it is
// writing, then runs it again over the same input, as a gateway restarted
// after a crash would replay what it had not yet recorded. Every record ends
// up in the ledger exactly once: batches the first process committed stay,
// the one it was in the middle of is rolled back, and the second process's
// inserts of records already there are counted as duplicates, not rows.
func TestWriterSurvivesKill(t *testing.T) {
	const n = 2000
	want := sumBy(normalizedAll(genRecords(n, crashSeed)), Filter{}, []Dimension{ByTenant, ByModel})
	forEachEngine(t, func(t *testing.T, _ engine, cfg Config) {
		db := mustOpen(t, cfg)

		first := writerProcess(t, cfg, "die", n)
		if err := first.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the first writer to write a fifth of the records", func() bool { return count(t, db) >= n/5 })
		if err := first.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := first.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("first writer: got %v, want it killed", err)
		}
		if cfg.Driver == DriverPostgres {
			// The server goes on with what the dead client had already sent
			// (a COMMIT may be in its socket buffer) until it notices the
			// connection is gone.
			eventually(t, "the server to end the killed writer's sessions", func() bool {
				var sessions int
				err := db.db.QueryRowContext(t.Context(),
					`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, childAppName).Scan(&sessions)
				if err != nil {
					t.Fatal(err)
				}
				return sessions == 0
			})
		}
		kept := count(t, db)
		if kept < n/5 || kept > n*childDieShare/5 {
			t.Fatalf("after the kill: got %d rows, want between %d and %d", kept, n/5, n*childDieShare/5)
		}

		second := writerProcess(t, cfg, "finish", n)
		out, err := second.Output()
		if err != nil {
			t.Fatalf("second writer: %v\n%s", err, out)
		}
		var written, duplicates int64
		if _, err := fmt.Sscanf(string(out), "written=%d duplicates=%d", &written, &duplicates); err != nil {
			t.Fatalf("second writer's report %q: %v", out, err)
		}
		if written != n-kept || duplicates != kept {
			t.Errorf("second writer: got written=%d duplicates=%d, want %d and %d", written, duplicates, n-kept, kept)
		}
		if got := count(t, db); got != n {
			t.Errorf("got %d rows, want %d", got, n)
		}
		got, err := db.Query(t.Context(), Filter{}, ByTenant, ByModel)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("totals after the restart (-want +got):\n%s", d)
		}
	})
}

func writerProcess(t *testing.T, cfg Config, mode string, n int) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	dsn := cfg.DSN
	if cfg.Driver == DriverPostgres {
		dsn += "&application_name=" + childAppName
	}
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDriver+"="+cfg.Driver, childDSN+"="+dsn,
		childRecords+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

// runChild is the writer process. A "die" child writes part of the records
// and waits to be killed; a "finish" child writes them all, closes the
// writer and prints how many rows were new and how many were already there.
func runChild() int {
	n, _ := strconv.Atoi(os.Getenv(childRecords))
	ctx := context.Background()
	db, err := Open(ctx, Config{Driver: os.Getenv(childDriver), DSN: os.Getenv(childDSN)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	m := NewMetrics(nil)
	w := NewWriter(db, WriterOptions{BatchSize: 25, FlushInterval: 2 * time.Millisecond, Metrics: m})
	rs := genRecords(n, crashSeed)
	if os.Getenv(childEnv) == "die" {
		for _, r := range rs[:n*childDieShare/5] {
			w.Write(r)
		}
		time.Sleep(time.Hour)
		return 0
	}
	for _, r := range rs {
		w.Write(r)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 3
	}
	fmt.Printf("written=%d duplicates=%d\n", counterValue(m.written), counterValue(m.duplicates))
	return 0
}

func counterValue(c interface{ Write(*dto.Metric) error }) int64 {
	var m dto.Metric
	_ = c.Write(&m)
	return int64(m.GetCounter().GetValue())
}
