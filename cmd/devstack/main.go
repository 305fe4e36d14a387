// Command devstack is `make run`: it starts Redis (when installed;
// otherwise ext_proc uses its embedded store), the control plane and
// ext_proc (in one process, cmd/node) and Envoy on the fixed local ports of
// configs/local, and a simulator for
// each provider the policy marks simulated (configs/local: all of them;
// configs/examples/real-providers: none, so the real APIs serve, with keys
// from the environment). The simulators run scripted, so an agent such as
// Claude Code pointed at the gateway finishes its session instead of
// calling its first tool forever. It serves the OpenAI API at
// http://127.0.0.1:8080/v1 until Ctrl-C (or SIGTERM), which stops every
// process it started. When Jaeger is installed it starts it too, and the
// gateway traces every request to it.
//
// -port runs a second stack beside it: every process and simulator then
// takes a free port (make clients runs its clients so).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/stack"
)

func main() {
	policyDir := flag.String("config", "configs/local", "policy directory to serve (copied; edit the copy to see live reloads)")
	quiet := flag.Bool("quiet", false, "do not echo process output")
	script := flag.Bool("script", true, "simulators call a tool only when the prompt asks for it (providersim README, scripted mode); false: whenever tools are offered")
	record := flag.String("record", "", "simulators write every request they receive to DIR/<provider>/NNN.json")
	port := flag.Int("port", stack.LocalPorts.Gateway, "the gateway's port; any other than the default (0: a free one) puts every process and simulator on a free port, beside a make run")
	dir := flag.String("dir", ".run", "directory for the policy copy, logs and the SQLite ledger (usage.db)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := stack.Options{
		Policy: *policyDir, Ports: stack.LocalPorts, Redis: stack.RedisIfPresent, Simulate: stack.SimulatePolicy,
		Script: *script, SimRecordDir: *record, Dir: *dir, Node: true,
	}
	if *port != stack.LocalPorts.Gateway {
		o.Ports, o.Simulate = stack.Ports{Gateway: *port}, stack.SimulatePolicyFreePorts
	}
	if err := run(ctx, o, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "devstack:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o stack.Options, quiet bool) error {
	if !quiet {
		o.Out = os.Stdout
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	stopViewer, traces := traceViewer(&o)
	if stopViewer != nil {
		defer stopViewer()
	}
	s, err := stack.Start(ctx, o)
	if err != nil {
		return err
	}
	defer s.Close()
	store := "embedded in-memory store (redis-server not installed)"
	if s.RedisAddr != "" {
		store = "redis at " + s.RedisAddr
	}
	key := "sk-local-demo"
	if s.Sim == nil {
		key = "$YOUR_KEY" // one whose sha256 is in the policy's tenants
	}
	fmt.Printf(`
Switchyard is serving the OpenAI API at %s/v1  (store: %s)

  curl %s/v1/chat/completions -H "Authorization: Bearer %s" \
    -H 'Content-Type: application/json' \
    -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'

The policy being served is %s: edit it and the gateway reloads it.
Logs: %s/*.log   Ctrl-C stops everything.
%s
`, s.URL, store, s.URL, key, s.PolicyDir, s.Dir, traces)
	consoleBanner(s)
	if s.Sim != nil {
		fmt.Printf("Simulated providers: %s (control API %s).\nsk-local-demo and sk-local-admin are for local use only.\n",
			strings.Join(s.Sim.Names(), ", "), s.Sim.ControlURL())
	} else {
		fmt.Println("No simulators: every provider is the real one at its base_url (use a key of your policy's tenants).")
	}
	<-ctx.Done()
	fmt.Println("\nstopping...")
	return nil
}

// consoleBanner says where the policy serves the console, if it does.
func consoleBanner(s *stack.Stack) {
	p, err := policy.Load(s.PolicyDir)
	if err != nil {
		return
	}
	for _, r := range p.Routes {
		if r.API == policy.APIConsole {
			fmt.Printf("The console: %s%s (sign in with the admin key).\n", s.URL, r.Path)
		}
	}
}
