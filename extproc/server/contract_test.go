package server_test

import (
	"testing"

	httpextprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/xds/resources"
)

// overrideAllowed reports whether the router-level ext_proc filter of the
// configuration xds generates (for the test policy) accepts sent as a mode
// override. Envoy takes an override only when it equals an allowed mode
// field by field and silently ignores any other, which would leave a
// stream buffered to its end; so every override the server sends is
// checked here against the real configuration.
func overrideAllowed(t *testing.T, sent *httpextprocv3.ProcessingMode) bool {
	t.Helper()
	p, err := policy.Compile([]policy.File{{Name: "p.yaml", Data: []byte(testPolicy)}})
	if err != nil {
		t.Fatal(err)
	}
	l := resources.Listener(p, resources.Options{})
	for _, fc := range l.GetFilterChains() {
		for _, nf := range fc.GetFilters() {
			var hcm hcmv3.HttpConnectionManager
			if nf.GetTypedConfig().UnmarshalTo(&hcm) != nil {
				continue
			}
			for _, hf := range hcm.GetHttpFilters() {
				var ep httpextprocv3.ExternalProcessor
				if hf.GetName() != "envoy.filters.http.ext_proc" || hf.GetTypedConfig().UnmarshalTo(&ep) != nil {
					continue
				}
				for _, a := range ep.GetAllowedOverrideModes() {
					if proto.Equal(a, sent) {
						return contract.Allowed(sent)
					}
				}
				return false
			}
		}
	}
	t.Fatal("the generated listener has no router-level ext_proc filter")
	return false
}
