//go:build vtprotobuf

package extprocapp

import (
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// TestRepliesHaveTheVTMarshaller: built as the Makefile builds it, the
// ext_proc replies take the codec's fast path.
func TestRepliesHaveTheVTMarshaller(t *testing.T) {
	if _, ok := any(&extprocv3.ProcessingResponse{}).(vtMarshaler); !ok {
		t.Fatal("ProcessingResponse has no vtprotobuf marshaller")
	}
}
