package main

import (
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/filters/router"
	"github.com/switchyard/switchyard/filters/router/routertest"
	"github.com/switchyard/switchyard/state/sticky"
)

// decisionTime is the production router's time per decision with 50
// models and 20 rules (the router's BenchmarkDecide, run in this program
// so the figure lands next to the others).
func decisionTime() (time.Duration, error) {
	p, err := routertest.Policy(50, 20)
	if err != nil {
		return 0, err
	}
	r, err := router.NewRouter(p, p.Routes[0], nil, sticky.New(1000, time.Now))
	if err != nil {
		return 0, err
	}
	req, perr := openaiapi.ParseChatRequest([]byte(`{"model":"auto","messages":[{"role":"user","content":"` + routertest.Prompt + `"}]}`))
	if perr != nil {
		return 0, perr
	}
	q := &router.Query{Chat: req, Hash: 7, User: "u", Header: func(string) string { return "" }}
	var failed error
	res := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
			if _, err := r.Decide(q); err != nil {
				failed = err
			}
		}
	})
	return time.Duration(res.NsPerOp()), failed
}
