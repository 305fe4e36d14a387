package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/switchyard/switchyard/stack"
)

// profileExtProc runs the gateway as run does (pinned, one Envoy worker)
// with ext_proc's profiles on, sends n chat completions at concurrency conc
// and writes ext_proc's CPU profile of that load and its allocations
// during it (allocs.pb.gz against allocs-base.pb.gz: go tool pprof
// -sample_index=alloc_space -base allocs-base.pb.gz allocs.pb.gz).
func profileExtProc(dir string, n, conc int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pin, err := pinSelf()
	if err != nil {
		return err
	}
	s, err := stack.Start(context.Background(), stack.Options{CPUs: pin.paths, ExtProcArgs: []string{"-pprof"}})
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
	if _, err := measure(client, t, 500, 8); err != nil {
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
	var sent int
	for time.Since(start) < 19*time.Second && sent < n {
		if _, err := measure(client, t, 10*conc, conc); err != nil {
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
