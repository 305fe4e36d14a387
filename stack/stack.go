package stack

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/providersim"
)

// RedisMode says whether a stack runs redis-server.
type RedisMode int

// Redis modes.
const (
	// RedisRequired starts redis-server and fails without it (tests).
	RedisRequired RedisMode = iota
	// RedisIfPresent starts it when installed, else the gateway uses its
	// embedded store (make run).
	RedisIfPresent
	// RedisOff never starts it.
	RedisOff
)

// Simulate says which providers of the policy a stack serves from
// simulators.
type Simulate int

// Simulation modes.
const (
	// SimulateAll serves every provider from a simulator on a free port
	// (tests): the copy's base_url points at it and marks it simulated.
	SimulateAll Simulate = iota
	// SimulatePolicy serves only the providers the policy marks
	// `simulated: true`, each from a simulator at its own base_url; every
	// other provider is reached at its real base URL, with its key from the
	// environment (make run).
	SimulatePolicy
	// SimulatePolicyFreePorts serves the same providers as SimulatePolicy,
	// each from a simulator on a free port that the copy's base_url points
	// at, so that a second stack runs beside make run's (make clients).
	SimulatePolicyFreePorts
)

// Ports fixes the addresses of a stack; zero values pick free ports.
type Ports struct {
	Gateway, EnvoyAdmin, XDS, ExtProcMetrics, XDSMetrics, Redis, SimControl int
}

// LocalPorts are the addresses `make run` uses, matching configs/local.
var LocalPorts = Ports{
	Gateway: 8080, EnvoyAdmin: 9901, XDS: 18000, ExtProcMetrics: 18002, XDSMetrics: 18003,
	Redis: 16379, SimControl: 9100,
}

// Options configure a stack.
type Options struct {
	// Root is the module root; empty finds it from the working directory.
	Root string
	// Policy is the policy directory to copy (default configs/local).
	Policy string
	// Dir holds the stack's files and logs; empty makes a temporary one.
	Dir string
	// Ports fixes addresses; zero values pick free ports.
	Ports Ports
	// Replicas is the number of Envoy + ext_proc pairs (default 1). They
	// share the listener port (SO_REUSEPORT), the control plane and Redis.
	Replicas int
	// Node runs the control plane and the first replica's ext_proc in one
	// process (cmd/node), as make run does; the process answers to both
	// names, "xds" and "extproc-0", and logs to node.log.
	Node  bool
	Redis RedisMode
	// RedisDurable runs Redis with an append-only file written through on
	// every command, so that a Redis killed and restarted (Restart) comes
	// back with all it had acknowledged, as a production Redis with
	// persistence does; without it Redis keeps nothing on disk.
	RedisDurable bool
	Simulate     Simulate
	// Script runs the policy's simulators in scripted mode: a tool is
	// called only when the prompt asks for it, so a real agent's session
	// ends by itself (make run). Tests leave it off: their simulators call
	// a tool whenever tools are offered.
	Script bool
	// SimRecordDir, when set, is where the simulators write every request
	// they receive (providersim.Config.RecordDir).
	SimRecordDir string
	// CACertFile is the trust bundle Envoy checks https providers against
	// (xds -ca-file); empty: the system's.
	CACertFile string
	// Overlay replaces (or adds) files of the policy copy by name, before
	// anything starts: a test changes one file of a shipped policy.
	Overlay map[string]string
	// ExtraProviders adds simulators the policy copy does not name yet.
	ExtraProviders []providersim.ProviderConfig
	// ProviderKeys makes a simulated provider insist on a key.
	ProviderKeys map[string]string
	// Env is added to every gateway process's environment.
	Env []string
	// ExtProcArgs are added to every ext_proc's command line (-pprof, say).
	ExtProcArgs []string
	// Out, when set, also receives every process's output.
	Out io.Writer
	// CPUs, when set, pins every gateway process (Envoy, ext_proc, xds,
	// Redis) to these CPUs (a taskset list such as "0"), and Envoy runs one
	// worker per CPU: the benchmark measures the gateway on one core.
	CPUs string
	// EnvoyUnder, when set, is a command Envoy runs under (valgrind and
	// its arguments, say), its PID Envoy's own; EnvoyReady bounds how long
	// Envoy may take to start serving (30s).
	EnvoyUnder []string
	EnvoyReady time.Duration
}

// Replica is one Envoy with its ext_proc.
type Replica struct {
	EnvoyAdmin     string // http://host:port
	ExtProcMetrics string // http://host:port
	// ExtProcSocket is the Unix socket (mode 0600) Envoy reaches ext_proc at.
	ExtProcSocket string
}

// Stack is a running gateway.
type Stack struct {
	Dir       string
	PolicyDir string
	URL       string // http://127.0.0.1:port, the OpenAI base is URL+"/v1"
	// Sim serves the simulated providers; nil when there are none.
	Sim       *providersim.Sim
	RedisAddr string
	XDS       string // http://host:port of the control plane's metrics
	Replicas  []Replica

	mu       sync.Mutex
	procs    []*proc
	tempDirs []string
	// aliases are the names a process answers to besides its own (the
	// node's: xds and extproc-0).
	aliases map[string]string
	opts    Options // what Start was given, for RestartRedis
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// Start builds (if needed) and starts a stack, and waits until it serves.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if o.Root == "" {
		if o.Root, err = ModuleRoot(); err != nil {
			return nil, err
		}
	}
	if o.Policy == "" {
		o.Policy = filepath.Join(o.Root, "configs", "local")
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	envoy, err := FindEnvoy(o.Root)
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "switchyard-e2e-"); err != nil {
			return nil, err
		}
	}
	// Processes run in Dir, so everything they are handed is absolute.
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return nil, err
	}
	if o.Policy, err = filepath.Abs(o.Policy); err != nil {
		return nil, err
	}
	s := &Stack{Dir: o.Dir, PolicyDir: filepath.Join(o.Dir, "policy")}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	bin, err := Binaries(o.Root, filepath.Join(o.Dir, "bin"))
	if err != nil {
		return nil, err
	}

	src, err := policy.Load(o.Policy)
	if err != nil {
		return nil, err
	}
	if err := s.startSim(ctx, src, o); err != nil {
		return nil, err
	}
	gw := pick(o.Ports.Gateway)
	s.URL = "http://127.0.0.1:" + strconv.Itoa(gw)
	simulated := func(string) (string, bool) { return "", false }
	if o.Simulate != SimulatePolicy {
		simulated = func(name string) (string, bool) {
			if s.Sim == nil || s.Sim.Addr(name) == "" {
				return "", false
			}
			return s.Sim.URL(name), true
		}
	}
	if err := copyPolicy(o.Policy, s.PolicyDir, simulated, "127.0.0.1:"+strconv.Itoa(gw), o.Overlay); err != nil {
		return nil, err
	}

	if o.Redis != RedisOff {
		if err := s.startRedis(o); err != nil {
			return nil, err
		}
	}

	xdsPort, xdsMetrics := pick(o.Ports.XDS), pick(o.Ports.XDSMetrics)
	s.XDS = "http://127.0.0.1:" + strconv.Itoa(xdsMetrics)
	xdsArgs := []string{"-config", s.PolicyDir, "-listen", addr(xdsPort), "-metrics", addr(xdsMetrics), "-poll", "500ms"}
	if o.CACertFile != "" {
		xdsArgs = append(xdsArgs, "-ca-file", o.CACertFile)
	}
	if !o.Node {
		if err := s.start(o, "xds", filepath.Join(bin, "xds"), xdsArgs...); err != nil {
			return nil, err
		}
		if err := waitHTTP(s.whileRunning(ctx, "xds"), s.XDS+"/healthz", 200); err != nil {
			return nil, s.failure("xds", err)
		}
	}

	for i := range o.Replicas {
		ports := o.Ports
		if i > 0 {
			ports = Ports{}
		}
		epMetrics, admin := pick(ports.ExtProcMetrics), pick(ports.EnvoyAdmin)
		name := "extproc-" + strconv.Itoa(i)
		sock, err := s.socketPath(name)
		if err != nil {
			return nil, err
		}
		// A spool directory each: a spool is one process's.
		args := []string{"-config", s.PolicyDir, "-listen", "unix:" + sock, "-metrics", addr(epMetrics), "-poll", "500ms",
			"-spool-dir", filepath.Join(s.Dir, "spool-"+strconv.Itoa(i))}
		if s.RedisAddr != "" {
			args = append(args, "-redis", s.RedisAddr)
		}
		args = append(args, o.ExtProcArgs...)
		if o.Node && i == 0 {
			if err := s.start(o, "node", filepath.Join(bin, "node"), slices.Concat(xdsArgs, []string{"--"}, args)...); err != nil {
				return nil, err
			}
			s.aliases = map[string]string{"xds": "node", name: "node"}
			if err := waitHTTP(s.whileRunning(ctx, "xds"), s.XDS+"/healthz", 200); err != nil {
				return nil, s.failure("xds", err)
			}
		} else if err := s.start(o, name, filepath.Join(bin, "extproc"), args...); err != nil {
			return nil, err
		}
		r := Replica{EnvoyAdmin: "http://127.0.0.1:" + strconv.Itoa(admin), ExtProcMetrics: "http://127.0.0.1:" + strconv.Itoa(epMetrics), ExtProcSocket: sock}
		if err := waitHTTP(s.whileRunning(ctx, name), r.ExtProcMetrics+"/healthz", 200); err != nil {
			return nil, s.failure(name, err)
		}
		bs := filepath.Join(o.Dir, "envoy-"+strconv.Itoa(i)+".yaml")
		if err := bootstrap(o.Root, bs, admin, xdsPort, sock, "switchyard-envoy-"+strconv.Itoa(i)); err != nil {
			return nil, err
		}
		ename := "envoy-" + strconv.Itoa(i)
		envoyArgs := []string{"-c", bs, "--log-level", "warn", "--component-log-level", contract.EnvoyComponentLogLevels, "--disable-hot-restart", "--drain-time-s", "1", "--parent-shutdown-time-s", "2"}
		if o.CPUs != "" {
			envoyArgs = append(envoyArgs, "--concurrency", strconv.Itoa(CPUCount(o.CPUs)))
		}
		path := envoy
		if len(o.EnvoyUnder) > 0 {
			path, envoyArgs = o.EnvoyUnder[0], slices.Concat(o.EnvoyUnder[1:], []string{envoy}, envoyArgs)
		}
		if err := s.start(o, ename, path, envoyArgs...); err != nil {
			return nil, err
		}
		if err := waitEnvoy(s.whileRunning(ctx, ename), r.EnvoyAdmin, cmp.Or(o.EnvoyReady, 30*time.Second)); err != nil {
			return nil, s.failure(ename, err)
		}
		s.Replicas = append(s.Replicas, r)
	}
	if err := waitHTTPWithin(ctx, s.URL+"/v1/models", 0, cmp.Or(o.EnvoyReady, 30*time.Second)); err != nil {
		return nil, s.failure("envoy-0", err)
	}
	return s, nil
}

// socketPath is where the named ext_proc listens: in the stack's directory,
// or, when that path is too long for a Unix socket, in a short private
// directory of its own.
func (s *Stack) socketPath(name string) (string, error) {
	path := filepath.Join(s.Dir, name+".sock")
	if len(path) <= maxSocketPath {
		return path, nil
	}
	dir, err := os.MkdirTemp("", "sy-")
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.tempDirs = append(s.tempDirs, dir)
	s.mu.Unlock()
	return filepath.Join(dir, name+".sock"), nil
}

// maxSocketPath is the longest Unix socket path Linux takes.
const maxSocketPath = 107

// startSim starts the simulators the mode asks for: every provider's on a
// free port, or the policy's simulated ones', at their base_url or on a
// free port.
func (s *Stack) startSim(ctx context.Context, p *policy.Policy, o Options) error {
	// Port 0 lets each listener take its own free port as it binds: a port
	// picked first and bound later can meanwhile become some connection's
	// ephemeral port (address already in use, in parallel tests).
	cfg := providersim.Config{ControlAddr: addr(o.Ports.SimControl), RecordDir: o.SimRecordDir}
	for _, pr := range p.Providers {
		a := addr(0)
		if o.Simulate != SimulateAll && !pr.Simulated {
			continue
		}
		if o.Simulate == SimulatePolicy {
			a = net.JoinHostPort(pr.Host, strconv.Itoa(pr.Port))
		}
		cfg.Providers = append(cfg.Providers, providersim.ProviderConfig{
			Name: pr.Name, Kind: providersim.Kind(pr.Kind), Addr: a, ExpectKey: o.ProviderKeys[pr.Name], Script: o.Script,
		})
	}
	cfg.Providers = append(cfg.Providers, o.ExtraProviders...)
	if len(cfg.Providers) == 0 {
		return nil
	}
	sim, err := providersim.Start(ctx, cfg)
	if err != nil {
		return fmt.Errorf("starting the provider simulators: %w", err)
	}
	s.Sim = sim
	return nil
}

func (s *Stack) startRedis(o Options) error {
	path, err := FindRedis()
	if err != nil {
		if o.Redis == RedisIfPresent {
			return nil
		}
		return err
	}
	s.opts = o
	return s.runRedis(o, path, pick(o.Ports.Redis))
}

// RestartRedis starts redis-server again, empty, on its address, after a
// test killed it (Kill("redis")): a crash and a restart without
// persistence.
func (s *Stack) RestartRedis() error {
	path, err := FindRedis()
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(s.RedisAddr)
	n, _ := strconv.Atoi(port)
	return s.runRedis(s.opts, path, n)
}

func (s *Stack) runRedis(o Options, path string, port int) error {
	persist := []string{"--appendonly", "no"}
	if o.RedisDurable {
		persist = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", s.Dir}, persist...)
	if err := s.start(o, "redis", path, args...); err != nil {
		return err
	}
	s.RedisAddr = addr(port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", s.RedisAddr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s.failure("redis", errors.New("redis-server did not start listening"))
}

// start runs a process with its output in Dir/<name>.log.
func (s *Stack) start(o Options, name, path string, args ...string) error {
	logPath := filepath.Join(s.Dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	if o.CPUs != "" {
		// taskset execs the command, so the PID stays the process's own.
		cmd = exec.Command("taskset", append([]string{"-c", o.CPUs, path}, args...)...)
	}
	var out io.Writer = f
	if o.Out != nil {
		out = io.MultiWriter(f, prefixWriter{name: name, w: o.Out})
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = s.Dir // relative paths of the policy (the SQLite ledger) land here
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	s.mu.Lock()
	s.procs = append(s.procs, p)
	s.mu.Unlock()
	return nil
}

// named returns the process that answers to name; the caller holds s.mu.
func (s *Stack) named(name string) *proc {
	if real, ok := s.aliases[name]; ok {
		name = real
	}
	var found *proc
	for _, p := range s.procs {
		if p.name == name {
			found = p
		}
	}
	return found
}

// Running reports whether the named process is still alive.
func (s *Stack) Running(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.named(name)
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Log returns a process's output so far.
func (s *Stack) Log(name string) string {
	s.mu.Lock()
	p := s.named(name)
	s.mu.Unlock()
	if p == nil {
		return ""
	}
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// Kill stops one process at once (SIGKILL), as a crash would.
func (s *Stack) Kill(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.named(name); p != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Close stops every process (SIGTERM, then SIGKILL) and the simulators.
func (s *Stack) Close() {
	s.mu.Lock()
	procs := s.procs
	s.procs = nil
	s.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	if s.Sim != nil {
		s.Sim.Close()
	}
	for _, d := range s.tempDirs {
		_ = os.RemoveAll(d)
	}
}

// WritePolicyFile replaces (or adds) one policy file atomically, as an
// operator's deploy tool would.
func (s *Stack) WritePolicyFile(name string, data []byte) error {
	tmp := filepath.Join(s.Dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.PolicyDir, name))
}

// ReadPolicyFile returns one policy file of the running copy.
func (s *Stack) ReadPolicyFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.PolicyDir, name))
}

// whileRunning is ctx, ended as soon as the named process exits: one that
// refuses its configuration is reported at once, not after a timeout.
func (s *Stack) whileRunning(ctx context.Context, name string) context.Context {
	s.mu.Lock()
	var done chan struct{}
	if p := s.named(name); p != nil {
		done = p.done
	}
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		defer cancel()
		select {
		case <-done:
		case <-ctx.Done():
		}
	}()
	return ctx
}

func (s *Stack) failure(name string, err error) error {
	if !s.Running(name) {
		err = errors.New("exited while starting")
	}
	log := s.Log(name)
	if len(log) > 4000 {
		log = log[len(log)-4000:]
	}
	return fmt.Errorf("%s: %w\n--- %s log (tail) ---\n%s", name, err, name, log)
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// FreeAddr is a loopback address on a free port (pick) for a process
// started beside a stack, such as a test's trace collector.
func FreeAddr() string { return addr(pick(0)) }

// pick returns port, or when it is 0 a free port for a process that binds
// it later (its number is written into configuration first). It picks
// below the kernel's ephemeral range: a port from that range, released and
// bound again later, could meanwhile be taken by any outgoing connection
// of a parallel test (Envoy once failed to bind its listener so).
func pick(port int) int {
	if port != 0 {
		return port
	}
	low := ephemeralLow()
	picked.Lock()
	defer picked.Unlock()
	for range 1000 {
		p := pickFloor + rand.IntN(low-pickFloor)
		if picked.ports[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		picked.ports[p] = true
		return p
	}
	panic("no free port below the ephemeral range")
}

// pickFloor is the lowest port pick uses, above the well-known and the
// commonly configured ones.
const pickFloor = 20000

// picked are the ports pick has handed out in this process, so parallel
// tests never get the same one.
var picked = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// ephemeralLow is the start of the kernel's ephemeral port range (Linux's
// default where it cannot be read).
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	if low < pickFloor+1000 {
		panic(fmt.Sprintf("the ephemeral port range starts at %d, too low to pick ports below it", low))
	}
	return low
}

func waitHTTP(ctx context.Context, url string, want int) error {
	return waitHTTPWithin(ctx, url, want, 30*time.Second)
}

func waitHTTPWithin(ctx context.Context, url string, want int, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if want == 0 || resp.StatusCode == want {
				return nil
			}
			last = fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func waitEnvoy(ctx context.Context, admin string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.TrimSpace(string(b)) == "LIVE" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("envoy did not become LIVE")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type prefixWriter struct {
	name string
	w    io.Writer
}

func (p prefixWriter) Write(b []byte) (int, error) {
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			if _, err := fmt.Fprintf(p.w, "%-10s| %s", p.name, line); err != nil {
				return 0, err
			}
		}
	}
	return len(b), nil
}

// PID returns the process ID of the named process, 0 if unknown.
func (s *Stack) PID(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.named(name); p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Restart starts a process that was stopped (killed) again with the same
// command line, environment and log file, as a supervisor would.
func (s *Stack) Restart(name string) error {
	s.mu.Lock()
	old := s.named(name)
	s.mu.Unlock()
	if old == nil {
		return fmt.Errorf("no process %s", name)
	}
	select {
	case <-old.done:
	default:
		return fmt.Errorf("%s is still running", name)
	}
	f, err := os.OpenFile(old.log, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(old.cmd.Path, old.cmd.Args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir, cmd.Env = old.cmd.Dir, old.cmd.Env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	p := &proc{name: old.name, cmd: cmd, log: old.log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	s.mu.Lock()
	for i, q := range s.procs {
		if q == old {
			s.procs[i] = p
		}
	}
	s.mu.Unlock()
	return nil
}
