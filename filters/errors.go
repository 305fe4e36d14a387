package filters

import "strings"

// joined is several configuration errors reported together, one per line.
type joined []error

func (j joined) Error() string {
	s := make([]string, len(j))
	for i, e := range j {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

func (j joined) Unwrap() []error { return j }

func joinErrors(errs []error) error { return joined(errs) }
