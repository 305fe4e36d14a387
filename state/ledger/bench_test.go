package ledger

import (
	"fmt"
	"testing"
)

// BenchmarkInsert writes batches of the Writer's default size.
func BenchmarkInsert(b *testing.B) {
	for _, e := range engines {
		b.Run(e.name, func(b *testing.B) {
			db, err := Open(b.Context(), e.fresh(b))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			rs := genRecords(500, 30)
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
