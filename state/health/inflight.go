package health

import (
	"sync"
	"sync/atomic"
)

// inflight counts the attempts under way on this replica per provider and
// model. It is load, not health, but it lives with the judgements of the
// same provider and model so that it outlives policy reloads like them.
type inflight struct {
	counts sync.Map // provider + "\x00" + model → *atomic.Int64
}

func (f *inflight) counter(provider, model string) *atomic.Int64 {
	k := provider + "\x00" + model
	if c, ok := f.counts.Load(k); ok {
		return c.(*atomic.Int64)
	}
	c, _ := f.counts.LoadOrStore(k, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// Begin counts an attempt on provider's model as under way until the
// returned function is called; calling it again does nothing.
func (m *Monitor) Begin(provider, model string) (end func()) {
	c := m.inflight.counter(provider, model)
	c.Add(1)
	var once sync.Once
	return func() { once.Do(func() { c.Add(-1) }) }
}

// InFlight is how many attempts on provider's model are under way on this
// replica: begun and not yet ended.
func (m *Monitor) InFlight(provider, model string) int64 {
	return m.inflight.counter(provider, model).Load()
}
