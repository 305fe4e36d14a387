package main

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/filters/router"
	"github.com/switchyard/switchyard/state/calibration"
)

// TestCalibratedStrongShareOnEveryBenchmark routes each public benchmark
// as one tenant's traffic through the production router on a route that
// asks for a strong share: the router learns its thresholds from the
// first half of the prompts (all of MT-Bench's 72, too few to split) and
// routes the rest. The strong share it delivers is the one asked on
// STEM, math word problems and open chat alike, where the shipped
// calibration (score ≥ 1 − share) misses by up to tens of points.
func TestCalibratedStrongShareOnEveryBenchmark(t *testing.T) {
	if testing.Short() {
		t.Skip("scores every benchmark prompt")
	}
	sets, err := routellm.Load("testdata/routellm")
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range sets {
		prompts := make([]string, 0, len(set.Items))
		for _, it := range set.Clean().Items {
			prompts = append(prompts, it.Prompt)
		}
		rand.New(rand.NewPCG(18, 18)).Shuffle(len(prompts), func(i, j int) { prompts[i], prompts[j] = prompts[j], prompts[i] })
		learn, route := prompts[:len(prompts)/2], prompts[len(prompts)/2:]
		if len(prompts) < 400 {
			learn, route = prompts, prompts
		}
		for _, share := range []float64{0.2, 0.4, 0.6} {
			p, err := twoModelPolicy("auto: {strong_share_max: " + ftoa(share) + ", min_samples: 50}")
			if err != nil {
				t.Fatal(err)
			}
			cal := calibration.New("r1", nil, nil, nil)
			r, err := router.NewRouter(p, p.Routes[0], nil, nil, router.WithCalibration(cal))
			if err != nil {
				t.Fatal(err)
			}
			tenant := &policy.Tenant{Name: "acme"}
			strongShare(t, r, tenant, learn) // observed while routed with the prior
			cal.Refresh(context.Background(), time.Minute)
			got := strongShare(t, r, tenant, route)
			tol := 0.03
			if len(route) < 100 {
				tol = 2.0 / float64(len(route)) // ties: a prompt or two either way
			}
			if math.Abs(got-share) > tol {
				t.Errorf("%s, asked %.2f: strong share %.3f (tolerance %.3f)", set.Name, share, got, tol)
			}
			prior, err := twoModels(1 - share)
			if err != nil {
				t.Fatal(err)
			}
			pr, err := router.NewRouter(prior, prior.Routes[0], nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s, asked %.2f: calibrated %.3f; shipped threshold %.2f gives %.3f", set.Name, share, got, 1-share, strongShare(t, pr, tenant, route))
		}
	}
}

// strongShare routes prompts as tenant's and returns the share sent to
// the strong model.
func strongShare(t *testing.T, r *router.Router, tenant *policy.Tenant, prompts []string) float64 {
	t.Helper()
	strong := 0
	for i, prompt := range prompts {
		req := &openaiapi.ChatRequest{Model: "auto", Messages: []openaiapi.Message{{Role: "user", Content: openaiapi.Content{Text: prompt}}}}
		d, e := r.Decide(&router.Query{Chat: req, Tenant: tenant})
		if e != nil {
			t.Fatalf("prompt %d: %v", i, e)
		}
		if d.Plan[0].Name == "strong" {
			strong++
		}
	}
	return float64(strong) / float64(len(prompts))
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
