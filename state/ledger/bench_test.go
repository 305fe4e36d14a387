package ledger

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/state/spool"
)

// BenchmarkInsert writes batches of the Writer's default size, and of the
// size a partial batch has at about 600 requests a second (the 200 ms
// flush).
func BenchmarkInsert(b *testing.B) {
	for _, e := range engines {
		for _, size := range []int{500, 128} {
			b.Run(fmt.Sprintf("%s/%d", e.name, size), func(b *testing.B) {
				db, err := Open(b.Context(), e.fresh(b))
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				rs := genRecords(size, 30)
				for i := 0; b.Loop(); i++ {
					for j := range rs {
						rs[j].RequestID = fmt.Sprintf("bench-%d-%d", i, j)
					}
					if _, err := db.Insert(b.Context(), rs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rs)), "ns/record")
			})
		}
	}
}

// discard is a Sink that takes every record.
type discard struct{}

func (discard) Insert(_ context.Context, rs []Record) (int, error) { return len(rs), nil }

// BenchmarkHoldAndWrite is what the usage filter costs the request path
// per request with both spools on disk: the record held as the answer
// leaves, then the final one written.
func BenchmarkHoldAndWrite(b *testing.B) {
	dir := b.TempDir()
	sp, _, err := spool.Open(dir, "ledger", spool.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sp.Close()
	held, _, err := spool.Open(dir, "held", spool.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer held.Close()
	w := NewWriter(discard{}, WriterOptions{Spool: sp, HoldSpool: held})
	defer w.Close(context.Background())
	rs := genRecords(1, 1)
	r := rs[0]
	for i := 0; b.Loop(); i++ {
		r.RequestID = "bench-" + strconv.Itoa(i)
		w.Hold(r)
		w.Write(r)
	}
}
