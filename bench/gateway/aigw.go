package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/stack"
)

// The anchor: Envoy AI Gateway v1.1's data plane (its extproc and an Envoy
// with the two ext_proc filters its controller generates), run from a
// static bootstrap as ../shared/peers/aigw/run.sh does, on ports of its
// own so that several runs share a machine.
//
//go:embed aigw/envoy.yaml.tmpl aigw/extproc-config.yaml
var aigwConf embed.FS

// aigwEnv names the built extproc (../shared/peers/aigw/build.sh); without
// it the anchor's path is skipped.
const aigwEnv = "AIGW_EXTPROC"

type aigw struct {
	envoy, extproc *exec.Cmd
	port, admin    int
}

// startAIGW starts the anchor in front of upstream (host:port), every
// process pinned to cpus with one Envoy worker, as the gateway's are.
func startAIGW(extproc, envoy, dir, upstream, cpus string) (*aigw, error) {
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return nil, err
	}
	run := filepath.Join(dir, "aigw")
	if err := os.MkdirAll(run, 0o755); err != nil {
		return nil, err
	}
	tmpl, err := aigwConf.ReadFile("aigw/envoy.yaml.tmpl")
	if err != nil {
		return nil, err
	}
	a := &aigw{port: freePort(), admin: freePort()}
	sock := filepath.Join(run, "extproc.sock")
	cfg := strings.NewReplacer("__UPSTREAM_HOST__", host, "__UPSTREAM_PORT__", port, "__EXTPROC_SOCK__", sock,
		"__LISTEN_PORT__", strconv.Itoa(a.port), "__ADMIN_PORT__", strconv.Itoa(a.admin)).Replace(string(tmpl))
	if err := os.WriteFile(filepath.Join(run, "envoy.yaml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	filter, err := aigwConf.ReadFile("aigw/extproc-config.yaml")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(run, "extproc-config.yaml"), filter, 0o644); err != nil {
		return nil, err
	}
	// The flags its controller passes the extproc sidecar, pprof off as in
	// its data-plane tests (it would bind a fixed port).
	a.extproc, err = pinnedCommand(cpus, filepath.Join(run, "extproc.log"), []string{"DISABLE_PPROF=true"}, extproc,
		"-configPath", filepath.Join(run, "extproc-config.yaml"), "-extProcAddr", "unix://"+sock,
		"-adminPort", strconv.Itoa(freePort()), "-rootPrefix", "/", "-maxRecvMsgSize", "536870912", "-logLevel", "warn")
	if err != nil {
		return nil, err
	}
	if err := waitFor(15*time.Second, func() bool { _, err := os.Stat(sock); return err == nil }); err != nil {
		a.stop()
		return nil, fmt.Errorf("the anchor's extproc did not listen (see %s)", filepath.Join(run, "extproc.log"))
	}
	argv := []string{"-c", filepath.Join(run, "envoy.yaml"), "--log-level", "warn", "--disable-hot-restart"}
	if cpus != "" {
		argv = append(argv, "--concurrency", strconv.Itoa(stack.CPUCount(cpus)))
	}
	if a.envoy, err = pinnedCommand(cpus, filepath.Join(run, "envoy.log"), nil, envoy, argv...); err != nil {
		a.stop()
		return nil, err
	}
	ready := func() bool {
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(a.admin) + "/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if err := waitFor(20*time.Second, ready); err != nil {
		a.stop()
		return nil, fmt.Errorf("the anchor's Envoy is not ready (see %s)", filepath.Join(run, "envoy.log"))
	}
	return a, nil
}

// pinnedCommand starts path with args under taskset when cpus is set
// (taskset execs it, so the PID is the process's own), its output in log.
func pinnedCommand(cpus, log string, env []string, path string, args ...string) (*exec.Cmd, error) {
	out, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	argv := append([]string{path}, args...)
	if cpus != "" {
		argv = append([]string{"taskset", "-c", cpus}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	return cmd, nil
}

func waitFor(d time.Duration, ok func() bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		if ok() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("timed out")
}

func (a *aigw) url() string {
	return "http://127.0.0.1:" + strconv.Itoa(a.port) + "/v1/chat/completions"
}

// pids are the anchor's processes: Envoy, then the extproc.
func (a *aigw) pids() []int { return []int{a.envoy.Process.Pid, a.extproc.Process.Pid} }

func (a *aigw) stop() {
	// Envoy first; the extproc's own SIGTERM handler waits 15 s for a
	// drain that nothing needs once Envoy is gone.
	for _, c := range []*exec.Cmd{a.envoy, a.extproc} {
		if c != nil && c.Process != nil {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
}
