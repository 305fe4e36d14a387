package resources_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	pgv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/router/cluster_specifiers/priority_group/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/xds/resources"
)

var update = flag.Bool("update", false, "rewrite the golden snapshots")

// snapshotPolicies are the policies whose snapshots the tests check, by
// golden file name: the shipped ones and those of testdata.
var snapshotPolicies = map[string]string{
	"local":          "../../configs/local",
	"real-providers": "../../configs/examples/real-providers",
	"connections":    "testdata/connections",
	"hedge":          "testdata/hedge",
}

// TestSnapshotGolden builds the snapshot of each shipped policy and compares
// it with testdata/<name>.golden.json; the snapshot must be consistent.
func TestSnapshotGolden(t *testing.T) {
	for name, dir := range snapshotPolicies {
		t.Run(name, func(t *testing.T) {
			p, err := policy.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := resources.Snapshot(p, resources.Options{AccessLog: true})
			if err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			got := dump(t, snap.GetResources(resource.ListenerType), snap.GetResources(resource.RouteType), snap.GetResources(resource.ClusterType), snap.GetResources(resource.RuntimeType))
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("snapshot differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

func dump(t *testing.T, groups ...map[string]types.Resource) []byte {
	t.Helper()
	var out []json.RawMessage
	for _, g := range groups {
		names := make([]string, 0, len(g))
		for n := range g {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(g[n])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	b, _ := json.Marshal(out)
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

func load(t *testing.T, yaml string) *policy.Policy {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(yaml)}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHTTPSProviderGetsTLSWithSNI(t *testing.T) {
	t.Parallel()
	p := load(t, `providers: [{name: anth, kind: openai, base_url: "https://api.example.com/prefix"}]`)
	c := resources.Cluster(p.Provider("anth"), p.Gateway.Edge, resources.Options{})
	if c.GetTransportSocket() == nil {
		t.Fatal("an https provider has no TLS transport socket")
	}
	var tls tlsv3.UpstreamTlsContext
	if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(&tls); err != nil {
		t.Fatal(err)
	}
	if tls.GetSni() != "api.example.com" {
		t.Errorf("SNI = %q", tls.GetSni())
	}
	if ca := tls.GetCommonTlsContext().GetValidationContext().GetTrustedCa().GetFilename(); ca != resources.DefaultCACertFile {
		t.Errorf("trusted CA = %q", ca)
	}
	if addr := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress(); addr.GetPortValue() != 443 {
		t.Errorf("port = %d", addr.GetPortValue())
	}
	if c.GetType() != clusterv3.Cluster_STRICT_DNS {
		t.Errorf("discovery type = %v", c.GetType())
	}
	plain := load(t, `providers: [{name: sim, kind: openai, base_url: "http://127.0.0.1:9"}]`)
	if resources.Cluster(plain.Provider("sim"), plain.Gateway.Edge, resources.Options{}).GetTransportSocket() != nil {
		t.Error("an http provider got TLS")
	}
}

// TestRoutesDoNotCutLongStreams guards the timeouts that matter for long
// generations: no whole-request timeout, and retries that move to the next
// provider's cluster.
func TestRoutesDoNotCutLongStreams(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("../../configs/local")
	if err != nil {
		t.Fatal(err)
	}
	rc := resources.RouteConfig(p)
	for _, r := range rc.GetVirtualHosts()[0].GetRoutes() {
		a := r.GetRoute()
		if a == nil {
			continue
		}
		if a.GetTimeout().AsDuration() != 0 {
			t.Errorf("route %s has a %v whole-request timeout", r.GetName(), a.GetTimeout().AsDuration())
		}
		rp := a.GetRetryPolicy()
		if !rp.GetRefreshClusterOnRetry() || rp.GetNumRetries().GetValue() != 2 {
			t.Errorf("route %s retry policy = %v", r.GetName(), rp)
		}
		if rp.GetPerTryIdleTimeout().AsDuration() == 0 {
			t.Errorf("route %s has no first-byte failover timeout", r.GetName())
		}
	}
	last := rc.GetVirtualHosts()[0].GetRoutes()
	if _, ok := last[len(last)-1].GetAction().(*routev3.Route_DirectResponse); !ok {
		t.Error("the last route is not the catch-all 404")
	}
}

// TestEveryDeploymentHasItsCluster: each deployment of a model is on its
// own provider, so it is its own cluster and its own priority group, which
// ext_proc's plan metadata names attempt by attempt.
func TestEveryDeploymentHasItsCluster(t *testing.T) {
	t.Parallel()
	p := load(t, `
providers:
  - {name: openai, kind: openai, base_url: "http://127.0.0.1:1"}
  - {name: east, kind: azure_openai, base_url: "https://east.example.com", api_version: "2024-10-21"}
  - {name: west, kind: azure_openai, base_url: "https://west.example.com", api_version: "2024-10-21"}
models:
  - {name: gpt-4o, provider: openai, context_window: 1000, max_output_tokens: 100, price_usd_per_mtok: {input: 1, output: 2}}
  - {name: gpt-4o, provider: east, upstream: gpt4o-east}
  - {name: gpt-4o, provider: west, upstream: gpt4o-west}
routes:
  - {name: chat, path: /v1/chat/completions, api: chat_completions}
`)
	snap, err := resources.Snapshot(p, resources.Options{})
	if err != nil {
		t.Fatal(err)
	}
	clusters := snap.GetResources(resource.ClusterType)
	var pgs pgv3.PriorityGroupClusterSpecifier
	rt := resources.RouteConfig(p).GetVirtualHosts()[0].GetRoutes()[0].GetRoute()
	if err := rt.GetInlineClusterSpecifierPlugin().GetExtension().GetTypedConfig().UnmarshalTo(&pgs); err != nil {
		t.Fatal(err)
	}
	groups := map[string]string{}
	for _, g := range pgs.GetPriorityGroups() {
		groups[g.GetName()] = g.GetClusters()[0].GetClusterName()
	}
	for _, d := range p.Model("gpt-4o").Deployments {
		if _, ok := clusters[d.Provider.Cluster]; !ok {
			t.Errorf("deployment on %s has no cluster %s", d.Provider.Name, d.Provider.Cluster)
		}
		if groups[d.Provider.Name] != d.Provider.Cluster {
			t.Errorf("priority group %s reaches %q, want %s", d.Provider.Name, groups[d.Provider.Name], d.Provider.Cluster)
		}
	}
	if len(clusters) != 3 || len(groups) != 3 {
		t.Errorf("%d clusters and %d groups for three deployments", len(clusters), len(groups))
	}
}

// TestSnapshotBytesAreStable: the same policy gives Envoy the same bytes,
// maps inside packed configs included, so that whatever compares or
// diffs the resources sees only real changes. (Envoy 1.40's own hash
// reads packed configs unpacked; TestPolicyReload checks that a routes
// change leaves its listener in place.)
func TestSnapshotBytesAreStable(t *testing.T) {
	for name, dir := range snapshotPolicies {
		t.Run(name, func(t *testing.T) {
			p, err := policy.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			var first map[string][]byte
			for range 20 {
				snap, err := resources.Snapshot(p, resources.Options{AccessLog: true})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string][]byte{}
				for _, typ := range []resource.Type{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.RuntimeType} {
					for n, r := range snap.GetResources(typ) {
						b, err := cache.MarshalResource(r)
						if err != nil {
							t.Fatal(err)
						}
						got[typ+"/"+n] = b
					}
				}
				if first == nil {
					first = got
					continue
				}
				for k, b := range got {
					if !bytes.Equal(b, first[k]) {
						t.Fatalf("%s: the same policy marshalled to different bytes", k)
					}
				}
			}
		})
	}
}
