package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/providersim"
)

// captureAll points each selected client straight at a scripted,
// recording simulator of its own protocol (providersim: Script,
// RecordDir) on its task, a multi-turn session with a tool call and a
// stream, and keeps the requests the client sent, in the simulator's
// record format, as dir/<slug>-<version>/NNN.json. The agents run with
// their default model (but where client.captureModel says), and once
// more on a plain "say hi" (<slug>-<version>-say-hi). Only the requests
// of the model APIs are kept (not a model list). A run that fails keeps
// nothing.
func captureAll(ctx context.Context, o options, dir string) error {
	scratch, err := os.MkdirTemp("", "switchyard-capture-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	n := 0
	for _, c := range o.selected() {
		version, err := c.pkg.version(o.tools)
		if err != nil {
			return err
		}
		says := []string{""}
		if c.agent {
			says = append(says, "say hi")
		}
		for _, say := range says {
			n++
			name := c.slug + "-" + version
			if say != "" {
				name += "-say-hi"
			}
			count, err := capture(ctx, o, c, say, filepath.Join(scratch, fmt.Sprint(n)), filepath.Join(dir, name))
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			fmt.Printf("%-50s %d requests\n", name, count)
		}
	}
	return nil
}

// captureModels are the models an SDK is told to call, by protocol; the
// replays put another in their place.
var captureModels = map[providersim.Kind]string{providersim.KindOpenAI: "gpt-4o-mini", providersim.KindAnthropic: "claude-3-5-haiku"}

// capture runs c once against a fresh simulator and replaces dest with
// what it recorded.
func capture(ctx context.Context, o options, c client, say, scratch, dest string) (int, error) {
	kind := providersim.KindOpenAI
	if c.api == policy.APIMessages {
		kind = providersim.KindAnthropic
	}
	rec := filepath.Join(scratch, "recorded")
	sim, err := providersim.Start(ctx, providersim.Config{
		Providers: []providersim.ProviderConfig{{Name: "upstream", Kind: kind, Script: true}},
		RecordDir: rec,
	})
	if err != nil {
		return 0, err
	}
	defer sim.Close()
	model := c.captureModel
	if model == "" && !c.agent {
		model = captureModels[kind]
	}
	w, err := newWorkspace(scratch, filepath.Join(o.root, "clients"), o.tools, sim.URL("upstream"), "sk-capture", model)
	if err != nil {
		return 0, err
	}
	w.say = say
	if _, _, err := run(ctx, c, w, o.timeout); err != nil {
		return 0, err
	}
	files, err := filepath.Glob(filepath.Join(rec, "upstream", "*.json"))
	if err != nil {
		return 0, err
	}
	var kept [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		var r struct{ Method string }
		if err := json.Unmarshal(b, &r); err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		if r.Method == http.MethodPost {
			kept = append(kept, withoutScratch(b, filepath.Dir(scratch)))
		}
	}
	if len(kept) == 0 {
		return 0, errors.New("no request of a model API was recorded")
	}
	if err := os.RemoveAll(dest); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return 0, err
	}
	for i, b := range kept {
		if err := os.WriteFile(filepath.Join(dest, fmt.Sprintf("%03d.json", i)), b, 0o644); err != nil {
			return 0, err
		}
	}
	return len(kept), nil
}

// capturedRoot is where a fixture says the capture ran: the clients put
// their working directory, home and its path-derived names (Claude Code's
// project "-tmp-...-work") in their prompts, and a fixture should not
// carry the machine's temporary directory.
const capturedRoot = "/capture"

// withoutScratch replaces the capture's scratch directory in a recorded
// request with capturedRoot, in both the forms the clients write it: as a
// path, and with its slashes turned to dashes.
func withoutScratch(b []byte, scratch string) []byte {
	b = bytes.ReplaceAll(b, []byte(scratch), []byte(capturedRoot))
	dashed := strings.ReplaceAll(scratch, "/", "-")
	return bytes.ReplaceAll(b, []byte(dashed), []byte(strings.ReplaceAll(capturedRoot, "/", "-")))
}
