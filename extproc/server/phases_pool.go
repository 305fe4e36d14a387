package server

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// A request's stream goroutine lives as long as its answer streams,
// seconds to minutes, and Go keeps a goroutine's stack as large as its
// deepest call made it, giving some back only at a collection and only
// by halves. Run on that goroutine, the filter chain's phases (auth,
// routing, quota, translation, the usage record) left about 16 KB of
// stack to each open stream, which then waited for its next chunk with
// 3.6 KB of it in use: at 1,000 open streams 17 MB of stacks, and as much
// heap again that the collector's pacing allowed on their account. The
// phases run instead on a few goroutines that serve one call after
// another (phasePool): their stacks stay grown, so no call copies its
// stack as it deepens, and a stream's own goroutine keeps only what
// receiving and sending take.

// phasePool runs calls on reused goroutines: as many as the calls at once
// have needed, up to a bound, each waiting for the next call once done.
type phasePool struct {
	work    chan *phaseCall
	workers atomic.Int32
	max     int32
}

type phaseCall struct {
	f    func()
	done chan any // what f panicked with (a phasePanic), or nil
}

var phaseCalls = sync.Pool{New: func() any { return &phaseCall{done: make(chan any, 1)} }}

// phasePanic is a panic of a phase, with the stack where it was raised:
// it is raised again on the stream's goroutine, whose recovery logs it.
type phasePanic struct {
	value any
	stack []byte
}

// newPhasePool returns a pool of up to 64 goroutines a processor: as
// many as the requests whose phases run or wait at once (a store that is
// slow, a hybrid request's calls) on a busy node.
func newPhasePool() *phasePool {
	return &phasePool{work: make(chan *phaseCall), max: int32(64 * runtime.GOMAXPROCS(0))}
}

// run runs f on one of the pool's goroutines, or on a new one when they
// are all busy, and returns once f has. A panic of f is raised again
// here, as a phasePanic.
func (p *phasePool) run(f func()) {
	c := phaseCalls.Get().(*phaseCall)
	c.f = f
	select {
	case p.work <- c:
	default:
		go p.serve(c)
	}
	r := <-c.done
	c.f = nil
	phaseCalls.Put(c)
	if r != nil {
		panic(r)
	}
}

// serve runs c, then the pool's next calls if there is room for one more
// goroutine in it.
func (p *phasePool) serve(c *phaseCall) {
	c.done <- c.call()
	if p.workers.Add(1) > p.max {
		p.workers.Add(-1)
		return
	}
	for c := range p.work {
		c.done <- c.call()
	}
}

func (c *phaseCall) call() (p any) {
	defer func() {
		if r := recover(); r != nil {
			p = phasePanic{value: r, stack: debug.Stack()}
		}
	}()
	c.f()
	return nil
}
