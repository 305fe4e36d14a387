package cache

import (
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters"
	"github.com/switchyard/switchyard/state/answercache"
)

// TestMaxMemoryFromThePolicy: the route's max_memory bounds what the
// filter keeps in memory.
func TestMaxMemoryFromThePolicy(t *testing.T) {
	t.Parallel()
	ref := policy.FilterRef{Name: "cache", Args: map[string]any{"max_memory": "1MiB"}}
	f, err := New(ref, filters.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	c := f.(*Filter)
	now := time.Now()
	for i := range 40 {
		c.mem.Put(strings.Repeat("k", 63)+string(rune('A'+i)), answercache.Entry{Body: make([]byte, 64<<10), Stored: now})
	}
	if b := c.mem.Bytes(); b > 1<<20 || b < 900<<10 {
		t.Errorf("40 answers of 64 KiB under max_memory 1MiB: memory holds %d bytes", b)
	}
}
