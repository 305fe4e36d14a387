package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// Instruction counts are what Envoy's share of the core is judged by when
// the machine is too noisy for CPU time to tell a few percent apart:
// valgrind's callgrind counts the instructions Envoy runs in user space,
// the same for the same binary, configuration and requests whatever else
// the machine does. System calls (the kernel's part) are not counted.

// instructionCase is one kind of request whose instructions are counted.
type instructionCase struct {
	name string
	// bound, when set, is the bound on requests in flight, held by one
	// request its provider answers after a minute, so that every request
	// counted is refused at it.
	bound bool
	path  string // instead of the chat completions route
	// plain counts the bare Envoy hop of `make bench` instead.
	plain bool
	// stream asks for the answer streamed (streamBody).
	stream bool
}

var instructionCases = []instructionCase{
	{name: "bare Envoy hop (router only), the same request", plain: true},
	{name: "chat completion served (OpenAI, non-streamed)"},
	{name: "bare Envoy hop, the same request streamed", plain: true, stream: true},
	{name: "chat completion streamed (OpenAI, about ten events)", stream: true},
	{name: "refused at the bound on requests in flight (503)", bound: true},
	{name: "no route (404): the least a local reply costs", path: "/no-such-route"},
}

// countInstructions prints, for each case, the instructions Envoy runs per
// request, over n requests from 8 clients after a warm-up.
func countInstructions(n int) error {
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found (apt-get install valgrind): %w", tool, err)
		}
	}
	gw, err := os.ReadFile(filepath.Join(mustRoot(), "configs", "local", "gateway.yaml"))
	if err != nil {
		return err
	}
	fmt.Printf("| Request | Envoy instructions per request (callgrind, %d requests) |\n|---|---:|\n", n)
	for _, c := range instructionCases {
		per, err := instructionsOf(c, string(gw), n)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Printf("| %s | %d |\n", c.name, per)
	}
	return nil
}

func instructionsOf(c instructionCase, gw string, n int) (int64, error) {
	dir, err := os.MkdirTemp("", "callgrind")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	under := []string{"valgrind", "--tool=callgrind", "--callgrind-out-file=" + filepath.Join(dir, "out.%p")}
	o := stack.Options{EnvoyUnder: under, EnvoyReady: 5 * time.Minute}
	if c.bound {
		o.Overlay = map[string]string{"gateway.yaml": inFlightBound.ReplaceAllString(gw, "max_requests_in_flight: 1}")}
	}
	if c.plain {
		// The hop's Envoy is counted; the stack only serves its simulator.
		o.EnvoyUnder, o.EnvoyReady = nil, 0
	}
	s, err := startStack(context.Background(), o)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	t := gatewayTarget(s)
	if c.stream {
		t.body = streamBody
	}
	pid := s.PID("envoy-0")
	switch {
	case c.plain:
		envoy, err := stack.FindEnvoy(mustRoot())
		if err != nil {
			return 0, err
		}
		plain, err := startPlainEnvoyUnder(under, 5*time.Minute, envoy, s.Dir, s.Sim.Addr("openai"), "")
		if err != nil {
			return 0, err
		}
		defer plain.stop()
		t = target{name: "plain", url: plain.url(), body: t.body}
		pid = plain.cmd.Process.Pid
	case c.bound:
		if err := s.Sim.SetFault("openai", providersim.Fault{Mode: providersim.FaultLatency, Delay: providersim.Duration(time.Minute), Count: 1}); err != nil {
			return 0, err
		}
		go post(&http.Client{Timeout: 5 * time.Minute}, t) // it ends with the stack
		time.Sleep(3 * time.Second)
		t.want = http.StatusServiceUnavailable
	case c.path != "":
		t.url, t.want = s.URL+c.path, http.StatusNotFound
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, DisableCompression: true}}
	defer client.CloseIdleConnections()
	if _, err := measure(client, t, 100, 8); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	}
	if out, err := exec.Command("callgrind_control", "--zero", strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("callgrind_control --zero: %w: %s", err, out)
	}
	if _, err := measure(client, t, n, 8); err != nil {
		return 0, err
	}
	if out, err := exec.Command("callgrind_control", "--dump", strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("callgrind_control --dump: %w: %s", err, out)
	}
	// The dump after the zeroing is the file numbered 1.
	dump := filepath.Join(dir, "out."+strconv.Itoa(pid)+".1")
	var b []byte
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if b, err = os.ReadFile(dump); err == nil && strings.Contains(string(b), "\nsummary: ") {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no callgrind dump in %s", dump)
		}
	}
	_, rest, _ := strings.Cut(string(b), "\nsummary: ")
	total, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("callgrind dump: %w", err)
	}
	return total / int64(n), nil
}
