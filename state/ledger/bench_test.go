package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"testing"

	"github.com/switchyard/switchyard/state/spool"
)

// BenchmarkInsert writes batches of the Writer's default size, and of the
// size a partial batch has at about 600 requests a second (the 200 ms
// flush), with request IDs as Envoy makes them (random UUIDs) and, for
// comparison, in time order. Random IDs land all over the request_id
// index, so an insert's cost grows with the table: each batch dirties
// about a page of that index per record, which the WAL then writes.
func BenchmarkInsert(b *testing.B) {
	for _, e := range engines {
		for _, size := range []int{500, 128} {
			for _, ids := range []struct {
				name string
				id   func(i, j int) string
			}{
				{"uuid", func(int, int) string { return uuid() }},
				{"ordered", func(i, j int) string { return fmt.Sprintf("bench-%012d-%04d", i, j) }},
			} {
				b.Run(fmt.Sprintf("%s/%d/%s", e.name, size, ids.name), func(b *testing.B) {
					db, err := Open(b.Context(), e.fresh(b))
					if err != nil {
						b.Fatal(err)
					}
					defer db.Close()
					rs := genRecords(size, 30)
					for i := 0; b.Loop(); i++ {
						for j := range rs {
							rs[j].RequestID = ids.id(i, j)
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
}

// uuid is a random version 4 UUID, as Envoy's x-request-id.
func uuid() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
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
