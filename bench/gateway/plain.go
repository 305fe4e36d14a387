package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/stack"
)

// plainEnvoy is the same Envoy binary as a bare reverse proxy in front of
// the simulator: no ext_proc, no filters but the router. It shows what one
// Envoy hop costs on this machine, so the gateway's own overhead can be
// told apart from it.
type plainEnvoy struct {
	cmd  *exec.Cmd
	port int
}

// cpus, when set, pins it there with one worker, as the gateway's Envoy is.
func startPlainEnvoy(envoy, dir, upstream, cpus string) (*plainEnvoy, error) {
	return startPlainEnvoyUnder(nil, 20*time.Second, envoy, dir, upstream, cpus)
}

// startPlainEnvoyUnder starts the plain Envoy under a command (valgrind
// and its arguments, say), given ready to start listening.
func startPlainEnvoyUnder(under []string, ready time.Duration, envoy, dir, upstream, cpus string) (*plainEnvoy, error) {
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return nil, err
	}
	listen, admin := freePort(), freePort()
	cfg := fmt.Sprintf(`admin: {address: {socket_address: {address: 127.0.0.1, port_value: %d}}}
static_resources:
  listeners:
  - name: plain
    address: {socket_address: {address: 127.0.0.1, port_value: %d}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: plain
          route_config:
            virtual_hosts: [{name: all, domains: ["*"], routes: [{match: {prefix: "/"}, route: {cluster: sim, timeout: 0s}}]}]
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router, suppress_envoy_headers: true}
  clusters:
  - name: sim
    type: STATIC
    load_assignment: {cluster_name: sim, endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: %s, port_value: %s}}}}]}]}
`, admin, listen, host, port)
	path := filepath.Join(dir, "plain-envoy.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "plain-envoy.log"))
	if err != nil {
		return nil, err
	}
	argv := append(slices.Clone(under), envoy, "-c", path, "--log-level", "warn", "--disable-hot-restart")
	if cpus != "" {
		argv = append(append([]string{"taskset", "-c", cpus}, argv...), "--concurrency", strconv.Itoa(stack.CPUCount(cpus)))
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &plainEnvoy{cmd: cmd, port: listen}
	ctx, cancel := context.WithTimeout(context.Background(), ready)
	defer cancel()
	for ctx.Err() == nil {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(listen)); err == nil {
			c.Close()
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.stop()
	return nil, fmt.Errorf("the plain Envoy did not start listening (see %s)", log.Name())
}

func (p *plainEnvoy) url() string {
	return "http://127.0.0.1:" + strconv.Itoa(p.port) + "/v1/chat/completions"
}

func (p *plainEnvoy) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
