package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/switchyard/switchyard/stack"
)

// The trace viewer make run starts when it is installed: Jaeger v2, one
// binary whose default configuration receives OTLP on 4317 (gRPC) and
// 4318 (HTTP) and serves its UI on 16686.
const (
	viewerBinary    = "jaeger"
	viewerCollector = "127.0.0.1:4317"
	viewerUI        = "http://127.0.0.1:16686"
)

// viewerSetup is the one-line setup the banner shows when no viewer is
// installed (README, Traces).
const viewerSetup = "docker run --rm -p 16686:16686 -p 4317:4317 jaegertracing/jaeger:latest, then add to gateway.yaml: tracing: {collector: \"127.0.0.1:4317\"}"

// traceViewer starts Jaeger when it is on PATH and the policy does not
// name a collector itself, and has the served copy of the policy trace
// every request to it. It returns how to stop it (nil when none started)
// and the banner's line about traces.
func traceViewer(o *stack.Options) (stop func(), banner string) {
	gw, err := os.ReadFile(filepath.Join(o.Policy, "gateway.yaml"))
	if err != nil || strings.Contains(string(gw), "\n  tracing:") {
		return nil, "Traces: as the policy's gateway.tracing says."
	}
	bin, err := exec.LookPath(viewerBinary)
	if err != nil {
		return nil, "Traces: off. To see every request's trace: " + viewerSetup
	}
	log, err := os.Create(filepath.Join(o.Dir, "jaeger.log"))
	if err != nil {
		return nil, "Traces: off (" + err.Error() + ")"
	}
	cmd := exec.Command(bin)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, "Traces: off (jaeger did not start: " + err.Error() + ")"
	}
	o.Overlay = map[string]string{"gateway.yaml": string(gw) + "  tracing: {collector: \"" + viewerCollector + "\", viewer: \"" + viewerUI + "/trace/{trace_id}\"}\n"}
	return func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		_ = cmd.Wait()
		log.Close()
	}, "Traces: every request's, in Jaeger at " + viewerUI
}
