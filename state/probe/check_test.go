package probe

import (
	"encoding/base64"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/configs/policy"
)

// TestChecksParse: every probe is a chat request the gateway accepts
// from a client, and needs exactly the capability it probes, as the
// router reads a request's needs.
func TestChecksParse(t *testing.T) {
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			req, e := openaiapi.ParseChatRequest(c.body("m", 16))
			if e != nil {
				t.Fatalf("the probe does not parse: %v", e)
			}
			var need policy.Capability
			for cap, has := range map[policy.Capability]bool{
				policy.CapTools: req.UsesTools(), policy.CapVision: req.HasImages(), policy.CapJSON: req.WantsJSON(), policy.CapStream: req.IncludeUsage(),
			} {
				if has {
					need |= cap
				}
			}
			if need != c.cap {
				t.Errorf("the probe needs %b, want only %b", need, c.cap)
			}
			if req.OutputCap() != 16 {
				t.Errorf("output cap %d, want 16", req.OutputCap())
			}
		})
	}
}

func TestJudge(t *testing.T) {
	const (
		text     = `{"choices":[{"index":0,"message":{"role":"assistant","content":"Red."},"finish_reason":"stop"}]}`
		toolCall = `{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"probe","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
		cut      = `{"choices":[{"index":0,"message":{"role":"assistant","content":"{\"o"},"finish_reason":"length"}]}`
		jsonText = `{"choices":[{"index":0,"message":{"role":"assistant","content":"{\"ok\": true}"},"finish_reason":"stop"}]}`
		stream   = "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n"
	)
	tests := []struct {
		name       string
		cap        policy.Capability
		a          answer
		want       Outcome
		wantDetail string
	}{
		{name: "a tool call", cap: policy.CapTools, a: answer{status: 200, body: []byte(toolCall)}, want: Passed},
		{name: "text instead of the call", cap: policy.CapTools, a: answer{status: 200, body: []byte(text)}, want: Failed, wantDetail: "without calling the tool"},
		{name: "cut before the call", cap: policy.CapTools, a: answer{status: 200, body: []byte(cut)}, want: Inconclusive, wantDetail: "max_tokens"},
		{name: "tools refused", cap: policy.CapTools,
			a:    answer{status: 400, body: []byte(`{"error":{"message":"gpt-x does not support tools.","type":"invalid_request_error"}}`)},
			want: Failed, wantDetail: "status 400: gpt-x does not support tools."},
		{name: "an image answered", cap: policy.CapVision, a: answer{status: 200, body: []byte(text)}, want: Passed},
		{name: "an image refused as unprocessable", cap: policy.CapVision, a: answer{status: 422, body: []byte(`{"error":{"message":"no images"}}`)}, want: Failed},
		{name: "JSON", cap: policy.CapJSON, a: answer{status: 200, body: []byte(jsonText)}, want: Passed},
		{name: "text in JSON mode", cap: policy.CapJSON, a: answer{status: 200, body: []byte(text)}, want: Failed, wantDetail: "not JSON"},
		{name: "JSON cut short", cap: policy.CapJSON, a: answer{status: 200, body: []byte(cut)}, want: Inconclusive},
		{name: "an unreadable answer", cap: policy.CapJSON, a: answer{status: 200, body: []byte(`{"choices":[]}`)}, want: Inconclusive},
		{name: "a stream with usage", cap: policy.CapStream, a: answer{status: 200, body: []byte(stream), stream: true, usage: true}, want: Passed},
		{name: "a stream without usage", cap: policy.CapStream, a: answer{status: 200, body: []byte(stream), stream: true}, want: Failed, wantDetail: "no usage"},
		{name: "a whole answer to a stream request", cap: policy.CapStream, a: answer{status: 200, body: []byte(text), usage: true}, want: Failed, wantDetail: "without streaming"},
		{name: "a stream that did not end", cap: policy.CapStream, a: answer{status: 200, body: []byte(stream[:40]), stream: true}, want: Inconclusive},
		{name: "a stream that ended in an error", cap: policy.CapStream,
			a:    answer{status: 200, body: []byte("data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"), stream: true},
			want: Inconclusive, wantDetail: "overloaded"},
		{name: "rate limited", cap: policy.CapTools, a: answer{status: 429, body: []byte(`{"error":{"message":"slow down"}}`)}, want: Inconclusive, wantDetail: "status 429: slow down"},
		{name: "key refused", cap: policy.CapJSON, a: answer{status: 401}, want: Inconclusive, wantDetail: "status 401"},
		{name: "server error", cap: policy.CapVision, a: answer{status: 503, body: []byte("no healthy upstream")}, want: Inconclusive, wantDetail: "status 503"},
		{name: "a long refusal is clipped", cap: policy.CapTools,
			a:    answer{status: 400, body: []byte(`{"error":{"message":"` + strings.Repeat("é", 150) + `"}}`)},
			want: Failed, wantDetail: strings.Repeat("é", 100) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, detail := judge(tt.cap, tt.a)
			if got != tt.want || !strings.Contains(detail, tt.wantDetail) {
				t.Errorf("got %s %q, want %s with %q", got, detail, tt.want, tt.wantDetail)
			}
		})
	}
}

func TestResultAfter(t *testing.T) {
	t0, t1 := time.Unix(100, 0), time.Unix(200, 0)
	tests := []struct {
		name string
		was  Result
		o    Outcome
		want Result
	}{
		{name: "a first pass", was: Result{Capability: "tools"}, o: Passed,
			want: Result{Capability: "tools", Verdict: Passing, Since: t1, Last: "passed", At: t1}},
		{name: "a first inconclusive probe", was: Result{Capability: "tools"}, o: Inconclusive,
			want: Result{Capability: "tools", Verdict: Unknown, Last: "inconclusive", Detail: "d", At: t1}},
		{name: "a failure after passing", was: Result{Capability: "tools", Verdict: Passing, Since: t0}, o: Failed,
			want: Result{Capability: "tools", Verdict: Failing, Since: t1, Last: "failed", Detail: "d", At: t1}},
		{name: "failing again keeps since", was: Result{Capability: "tools", Verdict: Failing, Since: t0}, o: Failed,
			want: Result{Capability: "tools", Verdict: Failing, Since: t0, Last: "failed", Detail: "d", At: t1}},
		{name: "capped keeps the failure", was: Result{Capability: "tools", Verdict: Failing, Since: t0}, o: Capped,
			want: Result{Capability: "tools", Verdict: Failing, Since: t0, Last: "capped", Detail: "d", At: t1}},
		{name: "inconclusive keeps the pass", was: Result{Capability: "json", Verdict: Passing, Since: t0}, o: Inconclusive,
			want: Result{Capability: "json", Verdict: Passing, Since: t0, Last: "inconclusive", Detail: "d", At: t1}},
		{name: "a pass after failing", was: Result{Capability: "json", Verdict: Failing, Since: t0}, o: Passed,
			want: Result{Capability: "json", Verdict: Passing, Since: t1, Last: "passed", At: t1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			detail := "d"
			if tt.o == Passed {
				detail = ""
			}
			if got := tt.was.after(tt.o, detail, t1); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRedSquare: the vision probe's image is the 8×8 PNG, red all over,
// that its doc promises.
func TestRedSquare(t *testing.T) {
	data, ok := strings.CutPrefix(redSquare, "data:image/png;base64,")
	if !ok {
		t.Fatalf("not a PNG data URL: %.40s", redSquare)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 8 || b.Dy() != 8 {
		t.Fatalf("image is %v, want 8×8", b)
	}
	red := color.RGBA{R: 255, A: 255}
	for x := range 8 {
		for y := range 8 {
			if got := color.RGBAModel.Convert(img.At(x, y)); got != red {
				t.Errorf("pixel (%d,%d) is %v, want %v", x, y, got, red)
			}
		}
	}
}
