package resources_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/xds/resources"
)

// envoyBinary is the pinned Envoy `make deps` installs, or $SWITCHYARD_ENVOY.
func envoyBinary(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("SWITCHYARD_ENVOY"), "../../.tools/bin/envoy"} {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	t.Skip("envoy not installed (make deps)")
	return ""
}

// TestEnvoyAcceptsTheSnapshot hands every resource xds builds for the
// shipped policies to the pinned Envoy (`--mode validate`), as static
// resources beside envoy/bootstrap.yaml's, the route table inlined into
// the listener: a field Envoy refuses, or a value out of its range (the
// edge limits, the client buckets), fails here rather than as a NACK.
func TestEnvoyAcceptsTheSnapshot(t *testing.T) {
	envoy := envoyBinary(t)
	raw, err := os.ReadFile("../../envoy/bootstrap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{
		"local": "../../configs/local", "real-providers": "../../configs/examples/real-providers",
		"tracing-grpc": "testdata/tracing-grpc", "tracing-http": "testdata/tracing-http",
		"connections": "testdata/connections", "hedge": "testdata/hedge",
	} {
		t.Run(name, func(t *testing.T) {
			p, err := policy.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := resources.Snapshot(p, resources.Options{AccessLog: true})
			if err != nil {
				t.Fatal(err)
			}
			var bs map[string]any
			if err := yaml.Unmarshal(raw, &bs); err != nil {
				t.Fatal(err)
			}
			static := bs["static_resources"].(map[string]any)
			add := func(key string, m proto.Message) {
				js, err := protojson.Marshal(m)
				if err != nil {
					t.Fatal(err)
				}
				var v any
				if err := json.Unmarshal(js, &v); err != nil {
					t.Fatal(err)
				}
				list, _ := static[key].([]any)
				static[key] = append(list, v)
			}
			var rc *routev3.RouteConfiguration
			for _, r := range snap.GetResources(resource.RouteType) {
				rc = r.(*routev3.RouteConfiguration)
			}
			for _, r := range snap.GetResources(resource.ListenerType) {
				l := proto.Clone(r.(*listenerv3.Listener)).(*listenerv3.Listener)
				f := l.FilterChains[0].Filters[0]
				hcm := &hcmv3.HttpConnectionManager{}
				if err := f.GetTypedConfig().UnmarshalTo(hcm); err != nil {
					t.Fatal(err)
				}
				hcm.RouteSpecifier = &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: rc}
				a, err := anypb.New(hcm)
				if err != nil {
					t.Fatal(err)
				}
				f.ConfigType = &listenerv3.Filter_TypedConfig{TypedConfig: a}
				add("listeners", l)
			}
			for _, c := range snap.GetResources(resource.ClusterType) {
				add("clusters", c.(*clusterv3.Cluster))
			}
			out, err := json.Marshal(bs)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "envoy.json")
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			res, err := exec.Command(envoy, "--mode", "validate", "-c", path, "--log-level", "error").CombinedOutput()
			if err != nil || !strings.Contains(string(res), "OK") {
				t.Fatalf("envoy --mode validate: %v\n%s", err, res)
			}
		})
	}
}
