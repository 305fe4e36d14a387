package health

// Counts are a model's attempts in a window, as replicas share them: the
// error rate is every replica's, latencies stay each replica's own.
type Counts struct {
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
}

// ModelCounts are one model's counts.
type ModelCounts struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Counts
}

// addShared counts other replicas' attempts in s.
func (s *Stats) addShared(c Counts) {
	if c.Requests == 0 {
		return
	}
	s.Requests += c.Requests
	s.Errors += c.Errors
	s.ErrorRate = float64(s.Errors) / float64(s.Requests)
}

// LocalCounts returns this replica's own attempts in every model's window,
// for other replicas to count with theirs.
func (m *Monitor) LocalCounts() []ModelCounts {
	m.mu.Lock()
	defer m.unlock()
	age := m.age(m.now())
	var out []ModelCounts
	for _, p := range m.providers {
		for _, md := range p.models {
			w := md.window
			w.advance(w.epochOf(age))
			if w.sum.requests > 0 {
				out = append(out, ModelCounts{Provider: p.name, Model: md.name, Counts: Counts{Requests: int(w.sum.requests), Errors: int(w.sum.errors)}})
			}
		}
	}
	return out
}

// SetShared replaces what other replicas' windows hold, summed over them:
// each model's error rate is then judged on every replica's attempts, so
// every replica sees the same degraded or removed model. Names the monitor
// does not track are ignored; a model left out has no shared attempts.
func (m *Monitor) SetShared(counts []ModelCounts) {
	m.mu.Lock()
	defer m.unlock()
	now := m.now()
	sum := map[*model]Counts{}
	for _, c := range counts {
		p := m.providers[c.Provider]
		if p == nil || p.models[c.Model] == nil {
			continue
		}
		md := p.models[c.Model]
		s := sum[md]
		s.Requests += max(c.Requests, 0)
		s.Errors += min(max(c.Errors, 0), max(c.Requests, 0))
		sum[md] = s
	}
	for _, p := range m.providers {
		for _, md := range p.models {
			if c := sum[md]; c != md.shared {
				md.shared = c
				md.sharedVersion++
				m.evalModel(p, md, now)
			}
		}
	}
}

// OnDegraded sets the function told of every model that turns degraded
// from healthy (the seed's level 1), on this replica's evidence or the
// shared windows': ext_proc checks its backup. It is called without the
// monitor's lock held.
func (m *Monitor) OnDegraded(fn func(provider, model string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.degradedHook = fn
}
