package health

import "time"

// canary is the progressive return of a provider or model from
// unavailable: it admits the share Recovery.Steps[step] of requests.
type canary struct {
	active      bool
	step        int
	started     time.Time
	stepStarted time.Time
}

// share is the share of requests the canary admits; 1 when there is none.
func (c *canary) share(r *RecoveryConfig) float64 {
	if !c.active {
		return 1
	}
	return r.Steps[c.step]
}

// advance moves the canary on at now. A step ends after StablePeriod in
// which the subject was never seen degraded (seeing it degraded restarts
// the step's period); reaching a share of 1, passing the last step or
// running MaxCanary in total ends the canary. Failures end it elsewhere,
// by making the subject unavailable. It returns whether the step changed
// and, when the canary ended, why.
func (c *canary) advance(now time.Time, degraded bool, r *RecoveryConfig) (stepped bool, ended string) {
	if degraded {
		c.stepStarted = now
	}
	for now.Sub(c.stepStarted) >= r.StablePeriod {
		c.stepStarted = c.stepStarted.Add(r.StablePeriod)
		c.step++
		stepped = true
		if c.step >= len(r.Steps) || r.Steps[c.step] >= 1 {
			*c = canary{}
			return stepped, "all steps passed"
		}
	}
	if r.MaxCanary > 0 && now.Sub(c.started) >= r.MaxCanary {
		*c = canary{}
		return stepped, "max canary time reached"
	}
	return stepped, ""
}

// status is the judged state of a provider or model, with its canary.
type status struct {
	state  State
	reason string
	since  time.Time
	canary canary
}

// change is what one update did, for the log.
type change struct {
	from, to      State
	moved         bool
	canaryStarted bool
	stepped       bool
	ended         string
}

// update sets the state judged at now. Entering unavailable ends any
// canary (a failure during the canary lands here); leaving it starts one,
// unless recovery is off or its first step is already full traffic.
func (s *status) update(st State, reason string, now time.Time, r *RecoveryConfig) change {
	ch := change{from: s.state, to: st}
	s.reason = reason
	if st != s.state {
		ch.moved = true
		s.state, s.since = st, now
		switch {
		case st == Unavailable:
			s.canary = canary{}
		case ch.from == Unavailable && len(r.Steps) > 0 && r.Steps[0] < 1:
			s.canary = canary{active: true, started: now, stepStarted: now}
			ch.canaryStarted = true
		}
	}
	if s.canary.active {
		ch.stepped, ch.ended = s.canary.advance(now, st == Degraded, r)
	}
	return ch
}

// CanaryStatus describes a running canary.
type CanaryStatus struct {
	// Step indexes Recovery.Steps; Share is that step's share of requests.
	Step        int       `json:"step"`
	Share       float64   `json:"share"`
	Started     time.Time `json:"started"`
	StepStarted time.Time `json:"step_started"`
}

func (c *canary) status(r *RecoveryConfig) *CanaryStatus {
	if !c.active {
		return nil
	}
	return &CanaryStatus{Step: c.step, Share: r.Steps[c.step], Started: c.started, StepStarted: c.stepStarted}
}
