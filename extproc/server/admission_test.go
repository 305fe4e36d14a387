package server_test

import (
	"strings"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/switchyard/switchyard/extproc/server"
)

// TestAdmission: past its bounds ext_proc refuses at once with 503, the
// OpenAI envelope and retry-after, and admits again as soon as room is
// made.
func TestAdmission(t *testing.T) {
	small := `{"model":"mini","messages":[{"role":"user","content":"hi"}]}`
	t.Run("requests in flight", func(t *testing.T) {
		h := newHarness(t)
		h.srv.SetAdmission(server.Admission{MaxInFlight: 1})
		first := h.stream(t, "")
		send(t, first, reqHeaders("rid-1", "Bearer sk-local-demo"))
		second := h.stream(t, "")
		wantOverloaded(t, send(t, second, reqHeaders("rid-2", "Bearer sk-local-demo")), "rid-2")
		closeAndWait(t, second)
		closeAndWait(t, first)
		third := h.stream(t, "")
		if r := send(t, third, reqHeaders("rid-3", "Bearer sk-local-demo")); r.GetImmediateResponse() != nil {
			t.Errorf("refused once the first request left: %v", r)
		}
		closeAndWait(t, third)
	})
	t.Run("bytes in flight", func(t *testing.T) {
		h := newHarness(t)
		h.srv.SetAdmission(server.Admission{MaxInFlightBytes: int64(len(small)) + 10})
		first := h.stream(t, "")
		send(t, first, reqHeaders("rid-a", "Bearer sk-local-demo"))
		if r := send(t, first, bodyMsg(small)); r.GetImmediateResponse() != nil {
			t.Fatalf("the first body was refused: %v", r)
		}
		second := h.stream(t, "")
		send(t, second, reqHeaders("rid-b", "Bearer sk-local-demo"))
		wantOverloaded(t, send(t, second, bodyMsg(small)), "rid-b")
		closeAndWait(t, second)
		closeAndWait(t, first)
		third := h.stream(t, "")
		send(t, third, reqHeaders("rid-c", "Bearer sk-local-demo"))
		if r := send(t, third, bodyMsg(small)); r.GetImmediateResponse() != nil {
			t.Errorf("refused once the first body left: %v", r)
		}
		closeAndWait(t, third)
		if n := h.srv.InFlight(); n != 0 {
			t.Errorf("%d exchanges left open", n)
		}
	})
}

func wantOverloaded(t *testing.T, resp *extprocv3.ProcessingResponse, id string) {
	t.Helper()
	ir := resp.GetImmediateResponse()
	if ir == nil || ir.GetStatus().GetCode() != 503 {
		t.Fatalf("answer %v, want an immediate 503", resp)
	}
	if b := string(ir.GetBody()); !strings.Contains(b, `"code":"gateway_overloaded"`) {
		t.Errorf("503 body %s: not the OpenAI envelope", b)
	}
	set := setOf(ir.GetHeaders())
	if set["retry-after"] != "1" || set["x-request-id"] != id {
		t.Errorf("503 headers %v: want retry-after 1 and the request id", set)
	}
}
