// Command providersim runs simulated LLM providers for end-to-end tests and
// local runs; see ../../README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/providersim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, os.Args[1:], os.Stdout, os.Getenv, log); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			log.Error("providersim", "err", err)
		}
		os.Exit(2)
	}
}

const shutdownGrace = 5 * time.Second

// run starts the simulator, announces its addresses as JSON lines on
// stdout and serves until ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string, log *slog.Logger) error {
	cfg, err := parseFlags(args, getenv)
	if err != nil {
		return err
	}
	cfg.Logger = log
	sim, err := providersim.Start(ctx, cfg)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	for _, name := range sim.Names() {
		if err := enc.Encode(announcement{Provider: name, Kind: string(sim.Kind(name)), Addr: sim.Addr(name)}); err != nil {
			sim.Close()
			return err
		}
	}
	if u := sim.ControlURL(); u != "" {
		if err := enc.Encode(map[string]string{"control": strings.TrimPrefix(u, "http://")}); err != nil {
			sim.Close()
			return err
		}
	}
	<-ctx.Done()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return sim.Shutdown(shutdownCtx)
}

type announcement struct {
	Provider string `json:"provider"`
	Kind     string `json:"kind"`
	Addr     string `json:"addr"`
}

func parseFlags(args []string, getenv func(string) string) (providersim.Config, error) {
	var cfg providersim.Config
	var providers, keyEnvs []string
	fs := flag.NewFlagSet("providersim", flag.ContinueOnError)
	fs.Func("provider", "a simulated provider as name=kind@host:port (repeatable; port 0 picks one); kinds: "+kindList(), func(s string) error {
		providers = append(providers, s)
		return nil
	})
	fs.Func("expect-key-env", "name=ENV_VAR: the provider only accepts the key held in ENV_VAR (repeatable)", func(s string) error {
		keyEnvs = append(keyEnvs, s)
		return nil
	})
	fs.StringVar(&cfg.ControlAddr, "control", "127.0.0.1:0", "host:port of the control API")
	fs.IntVar(&cfg.History, "history", 0, "recent requests kept per provider (0 = default 20, negative = none)")
	script := fs.Bool("script", false, "scripted mode for every provider: call a tool only when the prompt asks for it, then answer in text")
	fs.StringVar(&cfg.RecordDir, "record", "", "write every request received to DIR/<provider>/NNN.json, credentials redacted")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if len(providers) == 0 {
		return cfg, errors.New("at least one -provider is required")
	}
	index := map[string]int{}
	for _, s := range providers {
		pc, err := parseProvider(s)
		if err != nil {
			return cfg, err
		}
		pc.Script = *script
		index[pc.Name] = len(cfg.Providers)
		cfg.Providers = append(cfg.Providers, pc)
	}
	for _, s := range keyEnvs {
		name, env, ok := strings.Cut(s, "=")
		i, known := index[name]
		if !ok || env == "" || !known {
			return cfg, fmt.Errorf("-expect-key-env %q: want name=ENV_VAR for a declared provider", s)
		}
		key := getenv(env)
		if key == "" {
			return cfg, fmt.Errorf("-expect-key-env %q: environment variable %s is empty", s, env)
		}
		cfg.Providers[i].ExpectKey = key
	}
	return cfg, nil
}

// parseProvider reads name=kind@host:port.
func parseProvider(s string) (providersim.ProviderConfig, error) {
	name, rest, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return providersim.ProviderConfig{}, fmt.Errorf("-provider %q: want name=kind@host:port", s)
	}
	kind, addr, ok := strings.Cut(rest, "@")
	if !ok || addr == "" {
		return providersim.ProviderConfig{}, fmt.Errorf("-provider %q: want name=kind@host:port", s)
	}
	k := providersim.Kind(kind)
	known := false
	for _, kk := range providersim.Kinds() {
		known = known || kk == k
	}
	if !known {
		return providersim.ProviderConfig{}, fmt.Errorf("-provider %q: unknown kind %q (want one of %s)", s, kind, kindList())
	}
	return providersim.ProviderConfig{Name: name, Kind: k, Addr: addr}, nil
}

func kindList() string {
	kinds := providersim.Kinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
