package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// side records how it was run and runs until its context ends, or fails
// at once with err.
type side struct {
	args    chan []string
	stopped chan struct{}
	err     error
}

func newSide(err error) *side {
	return &side{args: make(chan []string, 1), stopped: make(chan struct{}), err: err}
}

func (s *side) run(ctx context.Context, args []string, _, _ io.Writer) error {
	s.args <- args
	defer close(s.stopped)
	if s.err != nil {
		return s.err
	}
	<-ctx.Done()
	return nil
}

func TestEachSideGetsItsFlags(t *testing.T) {
	x, e := newSide(nil), newSide(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "a", "--", "-listen", "b", "-pprof"}, io.Discard, io.Discard, x.run, e.run)
	}()
	if got := <-x.args; !slices.Equal(got, []string{"-listen", "a"}) {
		t.Errorf("xds got %q", got)
	}
	if got := <-e.args; !slices.Equal(got, []string{"-listen", "b", "-pprof"}) {
		t.Errorf("extproc got %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("a node stopped by its context returned %v", err)
	}
}

// TestOneFailsBothStop: a side that fails stops the other, and the node
// reports which failed.
func TestOneFailsBothStop(t *testing.T) {
	for _, failing := range []string{"xds", "extproc"} {
		t.Run(failing, func(t *testing.T) {
			boom := errors.New("boom")
			x, e := newSide(nil), newSide(nil)
			if failing == "xds" {
				x.err = boom
			} else {
				e.err = boom
			}
			done := make(chan error, 1)
			go func() { done <- run(context.Background(), []string{"--"}, io.Discard, io.Discard, x.run, e.run) }()
			select {
			case err := <-done:
				if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), failing+": ") {
					t.Errorf("node returned %v, want %s's failure", err, failing)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the other side kept running")
			}
			<-x.stopped
			<-e.stopped
		})
	}
}

func TestUsage(t *testing.T) {
	if err := run(context.Background(), []string{"-listen", "a"}, io.Discard, io.Discard, newSide(nil).run, newSide(nil).run); err == nil {
		t.Error("arguments without -- were taken")
	}
}
