package stack

import (
	"strconv"
	"strings"
)

// CPUCount is the number of CPUs in a taskset list such as "0", "0,2" or
// "0-3"; a malformed item counts as one.
func CPUCount(list string) int {
	n := 0
	for _, item := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, errA := strconv.Atoi(lo)
		b, errB := strconv.Atoi(hi)
		if isRange && errA == nil && errB == nil && b >= a {
			n += b - a + 1
		} else {
			n++
		}
	}
	return n
}
