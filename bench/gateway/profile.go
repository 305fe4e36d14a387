package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/switchyard/switchyard/stack"
)

// profileExtProc runs the gateway as run does (pinned, one Envoy worker)
// with ext_proc's profiles on, sends chat completions at concurrency conc
// for the profile's 20 s (streamed ones, the streamed row's, when
// streamed) and writes ext_proc's CPU profile of that load and its
// allocations during it (allocs.pb.gz against allocs-base.pb.gz:
// go tool pprof -sample_index=alloc_space -base allocs-base.pb.gz
// allocs.pb.gz).
func profileExtProc(dir string, conc int, streamed bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	s, err := startStack(context.Background(), stack.Options{CPUs: pin.paths, ExtProcArgs: []string{"-pprof"}})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := unlimitedQuota(s); err != nil {
		return err
	}
	body := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello"}]}`)
	t := target{name: "gateway", url: s.URL + "/v1/chat/completions", body: body, auth: "Bearer sk-local-demo"}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
	load := func(n, conc int) error {
		_, err := measure(client, t, n, conc)
		return err
	}
	if streamed {
		t.body = streamBody
		load = func(n, conc int) error {
			_, err := streamRun(client, t, n, conc)
			return err
		}
	}
	if err := load(500, 8); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	pprof := s.Replicas[0].ExtProcMetrics + "/debug/pprof/"
	if err := save(pprof+"allocs", filepath.Join(dir, "allocs-base.pb.gz")); err != nil {
		return err
	}
	// The CPU profile covers the load: it is asked for in the background,
	// for about as long as the load takes.
	start := time.Now()
	cpu := make(chan error, 1)
	go func() { cpu <- save(pprof+"profile?seconds=20", filepath.Join(dir, "cpu.pb.gz")) }()
	// The load lasts as long as the profile: a count alone ended it
	// after a few seconds, and the profile was mostly of an idle node.
	var sent int
	for time.Since(start) < 19*time.Second {
		if err := load(10*conc, conc); err != nil {
			return err
		}
		sent += 10 * conc
	}
	if err := <-cpu; err != nil {
		return err
	}
	if err := save(pprof+"allocs", filepath.Join(dir, "allocs.pb.gz")); err != nil {
		return err
	}
	fmt.Printf("%d requests in %s; profiles in %s\n", sent, time.Since(start).Round(time.Millisecond), dir)
	return nil
}

func save(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// profileTail runs the gateway as make bench does (the node, pinned) with
// ext_proc's profiles on and the collector's trace (GODEBUG=gctrace=1, in
// node.log), sends chat completions open loop at rate for 20 s and writes
// what shows a request's stall rather than its cost: an execution trace of
// 5 s mid-load (go tool trace), the mutex and block profiles and the CPU
// profile of the load, Envoy's stats before and after, the node's log,
// and the latencies' percentiles.
func profileTail(dir string, rate float64, extprocArgs []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	s, err := startStack(context.Background(), stack.Options{CPUs: pin.paths, Node: true, ExtProcArgs: append([]string{"-pprof"}, extprocArgs...), Env: []string{"GODEBUG=gctrace=1"}})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := unlimitedQuota(s); err != nil {
		return err
	}
	t := gatewayTarget(s)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}, Timeout: 10 * time.Second}
	if _, err := measure(client, t, 2000, 16); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	pprof := s.Replicas[0].ExtProcMetrics + "/debug/pprof/"
	if err := save(s.Replicas[0].EnvoyAdmin+"/stats", filepath.Join(dir, "envoy-stats-before.txt")); err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 4)
	)
	for _, p := range []struct {
		url, file string
		after     time.Duration
	}{
		{pprof + "profile?seconds=19", "cpu.pb.gz", 0},
		{pprof + "mutex?seconds=19", "mutex.pb.gz", 0},
		{pprof + "block?seconds=19", "block.pb.gz", 0},
		{pprof + "trace?seconds=5", "trace.out", 8 * time.Second},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(p.after)
			errs <- save(p.url, filepath.Join(dir, p.file))
		}()
	}
	lat, failures := openLoop(client, t, rate, 20*time.Second)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	if err := save(s.Replicas[0].EnvoyAdmin+"/stats", filepath.Join(dir, "envoy-stats-after.txt")); err != nil {
		return err
	}
	if err := keepNodeLog(s, dir); err != nil {
		return err
	}
	slow := 0
	for _, l := range lat {
		if l >= 10*time.Millisecond {
			slow++
		}
	}
	fmt.Printf("%d requests at %.0f req/s: p50 %s, p90 %s, p99 %s, p99.9 %s, max %s; %d took 10 ms or more; failed%s\nprofiles in %s\n",
		len(lat), rate, ms(pctl(lat, 50)), ms(pctl(lat, 90)), ms(pctlf(lat, 99)), ms(pctlf(lat, 99.9)), ms(pctlf(lat, 100)), slow, failureNote(failures), dir)
	return nil
}

// profileStreams holds open slow streams through the gateway (its bound
// on requests in flight raised above them, as make bench's many-streams
// row does) with ext_proc's profiles on, and writes ext_proc's heap
// (in use) and goroutines while they are open: what it keeps per stream.
func profileStreams(dir string, open int, extprocArgs []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	s, t, err := slowStreamStack(context.Background(), pin, append([]string{"-pprof"}, extprocArgs...), "GODEBUG=gctrace=1")
	if err != nil {
		return err
	}
	defer s.Close()
	pprof := s.Replicas[0].ExtProcMetrics + "/debug/pprof/"
	errs := make(chan error, 1)
	go func() {
		// Once every stream is open and past its first events.
		time.Sleep(holdFor / 2)
		err := save(pprof+"heap", filepath.Join(dir, "heap.pb.gz"))
		if err == nil {
			err = save(pprof+"goroutine", filepath.Join(dir, "goroutine.pb.gz"))
		}
		if err == nil { // with the runtime's MemStats: heap, stacks, GC goal
			err = save(pprof+"heap?debug=1", filepath.Join(dir, "heap.txt"))
		}
		errs <- err
	}()
	h := holdStreams(t, open, holdFor, s.PID("envoy-0"), s.PID("extproc-0"))
	if err := <-errs; err != nil {
		return err
	}
	if err := keepNodeLog(s, dir); err != nil {
		return err
	}
	fmt.Printf("%d streams served, %d failed%s; ext_proc %d → %d MB (%.0f KB a stream); profiles in %s\n",
		h.served, h.failed, failureNote(h.failures), h.extprocIdle/1024, h.extprocPeak/1024, h.perStream(open), dir)
	return nil
}

// keepNodeLog copies the node's log (with the collector's trace, where
// GODEBUG asked for it) into dir before the stack's files go.
func keepNodeLog(s *stack.Stack, dir string) error {
	log, err := os.ReadFile(filepath.Join(s.Dir, "node.log"))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "node.log"), log, 0o644)
}
