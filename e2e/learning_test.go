package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/state/priors"
)

// learnRoute is a chat route that learns domain priors, appended to
// configs/local's routes.
const learnRoute = `
  - name: learn-chat
    path: /v1/learn/chat/completions
    api: chat_completions
    filters: [auth, router, quota, translate, usage]
    routing:
      strategy: cost-optimized
      # A prior worth two verdicts: a few ratings move a domain.
      learn: {prior_weight: 2}
`

// Two domains of the demo app: the same easy question under two system
// prompts.
const (
	draftingSystem = "You are the contract drafting assistant of a law firm. Draft clauses the partners can sign."
	chitchatSystem = "You are the greeting bot of a hotel lobby screen. Welcome the guests."
)

// TestLearningMovesADomain: through Envoy, an app's ratings teach the
// domain of the request they rate. Thumbs down on one system prompt's
// weak answers and up on another's send the first domain's next easy
// request to a stronger model and keep the second's on the weak one;
// /v1/usage/quality reports both domains with their verdicts, estimated
// quality and mode; the admin API lists them, and resetting the first
// puts it back on the prior: its next request is routed as before.
func TestLearningMovesADomain(t *testing.T) {
	t.Parallel()
	root, _ := stack.ModuleRoot()
	routes, err := os.ReadFile(filepath.Join(root, "configs", "local", "routes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := startStack(t, stack.Options{Overlay: map[string]string{"routes.yaml": string(routes) + learnRoute}})
	fingerprint := func(system string) string {
		var p priors.Print
		p.Add(system)
		return priors.Key{FP: p.Sum()}.Hex()
	}
	drafting, chitchat := fingerprint(draftingSystem), fingerprint(chitchatSystem)

	// ask sends an easy question under system and returns the request's
	// ID, the model that served it and the route's reason.
	n := 0
	ask := func(system string) (id, model, reason string) {
		t.Helper()
		n++
		body := fmt.Sprintf(`{"model":"auto","messages":[{"role":"system","content":%q},{"role":"user","content":"hello, question %d"}]}`, system, n)
		resp, b := postDemo(t, s, "/v1/learn/chat/completions", body)
		if resp.StatusCode != 200 {
			t.Fatalf("asking: %d %s", resp.StatusCode, b)
		}
		return resp.Header.Get("X-Request-Id"), resp.Header.Get("X-Switchyard-Model"), resp.Header.Get("X-Switchyard-Route-Reason")
	}
	// rate gives a request's answer a score, once its ledger row is in.
	rate := func(id string, score float64) {
		t.Helper()
		if err := eventually(10*time.Second, func() error {
			if resp, _ := postDemo(t, s, "/v1/feedback", fmt.Sprintf(`{"request_id":%q,"score":%g}`, id, score)); resp.StatusCode != 200 {
				return errNotYet
			}
			return nil
		}); err != nil {
			t.Fatalf("rating %s never accepted", id)
		}
	}
	// domains waits for the learner's refresh to show what test wants
	// in the demo tenant's domains on the route.
	domains := func(what string, test func(map[string]priors.DomainReport) bool) map[string]priors.DomainReport {
		t.Helper()
		var got map[string]priors.DomainReport
		if err := eventually(30*time.Second, func() error {
			got = map[string]priors.DomainReport{}
			for _, d := range qualityDomains(t, s.URL, demoKey) {
				if d.Route == "learn-chat" && d.App == "demo" {
					got[d.Domain] = d
				}
			}
			if !test(got) {
				return errNotYet
			}
			return nil
		}); err != nil {
			t.Fatalf("/v1/usage/quality never showed %s: %+v", what, got)
		}
		return got
	}

	const rated = 6
	_, weak, reason := ask(draftingSystem)
	if strings.Contains(reason, "domain prior") {
		t.Fatalf("before any verdict the route reason is %q; want no domain prior", reason)
	}
	for range rated {
		for _, d := range []struct {
			system string
			score  float64
		}{{draftingSystem, 0}, {chitchatSystem, 1}} {
			id, model, _ := ask(d.system)
			if model != weak {
				t.Fatalf("before any verdict an easy question was served by %s, not %s", model, weak)
			}
			rate(id, d.score)
		}
	}

	learnt := domains("both domains taught", func(ds map[string]priors.DomainReport) bool {
		return ds[drafting].Verdicts > rated-0.5 && ds[chitchat].Verdicts > rated-0.5
	})
	if a, b := learnt[drafting], learnt[chitchat]; !(a.Shift > 0 && b.Shift < 0 && a.EstimatedQuality < b.EstimatedQuality && a.Mode != priors.ModePrior) {
		t.Errorf("the rated-down domain %+v and the rated-up one %+v: want the first shifted up with the lower estimated quality", a, b)
	}
	if _, model, reason := ask(draftingSystem); model == weak || !strings.Contains(reason, "domain prior +") {
		t.Errorf("after thumbs down, the drafting domain's easy question went to %s (%q); want a stronger model than %s, by the domain's prior", model, reason, weak)
	}
	if _, model, reason := ask(chitchatSystem); model != weak || !strings.Contains(reason, "domain prior -") {
		t.Errorf("after thumbs up, the chit-chat domain's easy question went to %s (%q); want %s, by the domain's prior", model, reason, weak)
	}

	code, b := admin(t, s, http.MethodGet, "/admin/domains?route=learn-chat&tenant=demo", "")
	var list struct{ Data []priors.DomainReport }
	if code != 200 || json.Unmarshal(b, &list) != nil || len(list.Data) != 2 {
		t.Fatalf("GET /admin/domains: %d %s; want the two domains", code, b)
	}
	if code, b := admin(t, s, http.MethodDelete, "/admin/domains/"+drafting+"?route=learn-chat&tenant=demo&app=demo", ""); code != 200 {
		t.Fatalf("resetting the drafting domain: %d %s", code, b)
	}
	domains("the drafting domain reset", func(ds map[string]priors.DomainReport) bool {
		d, ok := ds[drafting]
		return !ok || (d.Verdicts == 0 && d.Shift == 0)
	})
	// With one learnt domain left, the tenant routes as without learning.
	if _, model, reason := ask(draftingSystem); model != weak || strings.Contains(reason, "domain prior") {
		t.Errorf("after the reset, the drafting domain's easy question went to %s (%q); want %s without a domain prior", model, reason, weak)
	}
}
