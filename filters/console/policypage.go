package console

import (
	"context"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/configs/reload"
)

// policyView is the Policy page's: the policy stays YAML in git, so the
// page shows it and what became of the last edit, and edits nothing.
type policyView struct {
	P      *policy.Policy
	Status reload.Status
	// Pending is set when the last edit refused came after the policy
	// that serves: the files on disk are not what serves.
	Pending bool
}

func (f *Filter) policyPage(_ context.Context, c *call) (any, error) {
	v := &policyView{P: c.x.Policy, Status: reload.Status{Version: c.x.Policy.Version}}
	if f.loads != nil {
		v.Status = f.loads.Status()
	}
	v.Pending = v.Status.Refused != nil && !v.Status.Refused.At.Before(v.Status.Applied)
	return v, nil
}
