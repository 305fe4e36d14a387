package translatortest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/translator"
)

// recorder is a testing.TB that keeps the first failure instead of
// failing the test, so the checks can be shown to fail.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	if r.failure == "" {
		r.failure = fmt.Sprintf(format, args...)
	}
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// failure runs check against a recorder and returns what it failed with,
// "" if it passed.
func failure(check func(tb testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
	return r.failure
}

// fakeStream writes out when the stream ends, and perCall on every call
// that carries bytes; with eosNeedsBytes it ends only on such a call.
type fakeStream struct {
	translator.Translator
	out, perCall  string
	eosNeedsBytes bool
}

func (f *fakeStream) StreamChunk(b []byte, eos bool) []byte {
	var s string
	if len(b) > 0 {
		s = f.perCall
	}
	if eos && (len(b) > 0 || !f.eosNeedsBytes) {
		s += f.out
	}
	return []byte(s)
}

const chunk = "data: {\"object\":\"chat.completion.chunk\"}\n\n"

func TestCheckStream(t *testing.T) {
	tests := []struct {
		name    string
		fake    fakeStream
		wantErr string
	}{
		{name: "done", fake: fakeStream{out: ": ping\n\n" + chunk + "data: [DONE]\n\n"}},
		{name: "error event", fake: fakeStream{out: chunk + "data: {\"error\":{\"message\":\"m\"}}\n\n"}},
		{name: "output depends on the cut", fake: fakeStream{perCall: ": call\n\n", out: "data: [DONE]\n\n"}, wantErr: "changes the output"},
		{name: "a line neither data nor comment", fake: fakeStream{out: "event: x\ndata: [DONE]\n\n"}, wantErr: "neither data nor a comment"},
		{name: "unfinished event", fake: fakeStream{out: "data: [DONE]\n"}, wantErr: "ends inside an event"},
		{name: "no events", fake: fakeStream{out: ": ping\n\n"}, wantErr: "no events"},
		{name: "data not JSON", fake: fakeStream{out: "data: {\n\ndata: [DONE]\n\n"}, wantErr: "not JSON"},
		{name: "event after DONE", fake: fakeStream{out: "data: [DONE]\n\n" + chunk}, wantErr: "more follow"},
		{name: "event after an error", fake: fakeStream{out: "data: {\"error\":{}}\n\ndata: [DONE]\n\n"}, wantErr: "more follow"},
		{name: "no end", fake: fakeStream{out: chunk}, wantErr: "neither [DONE] nor an error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failure(func(tb testing.TB) {
				CheckStream(tb, []byte("provider bytes"), 5, func() translator.Translator { f := tt.fake; return &f })
			})
			if tt.wantErr == "" && got != "" || !strings.Contains(got, tt.wantErr) {
				t.Fatalf("got failure %q, want one containing %q", got, tt.wantErr)
			}
		})
	}
}

func TestSplits(t *testing.T) {
	tests := []struct {
		name    string
		fake    fakeStream
		wantErr string
	}{
		{name: "same output every way", fake: fakeStream{out: "data: [DONE]\n\n"}},
		{name: "eos alone loses the end", fake: fakeStream{out: "data: [DONE]\n\n", eosNeedsBytes: true}, wantErr: "eos in an empty chunk"},
		{name: "output per chunk", fake: fakeStream{out: "data: [DONE]\n\n", perCall: ":\n\n"}, wantErr: "cut at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failure(func(tb testing.TB) {
				Splits(tb, []byte("provider bytes"), []byte(tt.fake.perCall+tt.fake.out), func() translator.Translator { f := tt.fake; return &f })
			})
			if tt.wantErr == "" && got != "" || !strings.Contains(got, tt.wantErr) {
				t.Fatalf("got failure %q, want one containing %q", got, tt.wantErr)
			}
		})
	}
}

func TestCheckComplete(t *testing.T) {
	envelope := []byte(`{"error":{"message":"m","type":"t"}}`)
	completion := []byte(`{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`)
	tests := []struct {
		name    string
		status  int
		r       translator.Result
		success func(translator.Result) error
		wantErr string
	}{
		{name: "success", status: 200, r: translator.Result{Status: 200, Body: completion}, success: ChatCompletion},
		{name: "error", status: 500, r: translator.Result{Status: 502, Body: envelope}},
		{name: "body not JSON", status: 500, r: translator.Result{Status: 502, Body: []byte("oops")}, wantErr: "is not JSON"},
		{name: "error without an envelope", status: 500, r: translator.Result{Status: 502, Body: []byte(`{}`)}, wantErr: "error envelope"},
		{name: "redirect status", status: 500, r: translator.Result{Status: 302, Body: envelope}, wantErr: "error envelope"},
		{name: "2xx for a provider error", status: 500, r: translator.Result{Status: 200, Body: completion}, wantErr: "for provider status 500"},
		{name: "2xx for a body success refuses", status: 200, r: translator.Result{Status: 200, Body: completion},
			success: func(translator.Result) error { return errors.New("not real") }, wantErr: "not real"},
		{name: "2xx without a chat completion", status: 200, r: translator.Result{Status: 200, Body: []byte(`{"object":"list"}`)},
			success: ChatCompletion, wantErr: "not a chat completion"},
		{name: "unknown finish reason", status: 200, r: translator.Result{Status: 200, Body: []byte(strings.Replace(string(completion), "stop", "end_turn", 1))},
			success: ChatCompletion, wantErr: "finish_reason end_turn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failure(func(tb testing.TB) { CheckComplete(tb, tt.status, tt.r, tt.success) })
			if tt.wantErr == "" && got != "" || !strings.Contains(got, tt.wantErr) {
				t.Fatalf("got failure %q, want one containing %q", got, tt.wantErr)
			}
		})
	}
}
