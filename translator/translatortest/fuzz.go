package translatortest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard/switchyard/apischema/openaiapi"
	"github.com/switchyard/switchyard/translator"
)

// Seeds returns the contents of the files under testdata that match
// pattern, for a fuzz test's seed corpus. A pattern that matches nothing
// fails f.
func Seeds(f *testing.F, pattern string) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seeds for %s: %v", pattern, err)
	}
	out := make([][]byte, len(paths))
	for i, p := range paths {
		if out[i], err = os.ReadFile(p); err != nil {
			f.Fatal(err)
		}
	}
	return out
}

// CheckComplete fails tb unless r, what Complete made of a provider answer
// with status, holds what every translator promises: a JSON body; an error
// status (4xx or 5xx) with OpenAI's error envelope; and a 2xx only for a
// provider 2xx that success accepts as a real answer (it returns why not).
func CheckComplete(tb testing.TB, status int, r translator.Result, success func(translator.Result) error) {
	tb.Helper()
	if !json.Valid(r.Body) {
		tb.Fatalf("body %q is not JSON", r.Body)
	}
	if r.Status < 200 || r.Status > 299 {
		var e struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if r.Status < 400 || json.Unmarshal(r.Body, &e) != nil || e.Error == nil || e.Error.Message == "" {
			tb.Fatalf("got status %d with body %s, want an error status with an error envelope", r.Status, r.Body)
		}
		return
	}
	if status < 200 || status > 299 {
		tb.Fatalf("got status %d for provider status %d, want an error", r.Status, status)
	}
	if err := success(r); err != nil {
		tb.Fatalf("got status %d with body %s, want an error: %v", r.Status, r.Body, err)
	}
}

// ChatCompletion returns why r's body is not a chat completion with one
// choice whose finish reason is one OpenAI clients know, or nil.
func ChatCompletion(r translator.Result) error {
	var c openaiapi.ChatCompletion
	if err := json.Unmarshal(r.Body, &c); err != nil || c.Object != "chat.completion" || len(c.Choices) != 1 {
		return errors.New("the body is not a chat completion with one choice")
	}
	switch c.Choices[0].FinishReason {
	case openaiapi.FinishStop, openaiapi.FinishLength, openaiapi.FinishToolCalls, openaiapi.FinishContentFilter:
		return nil
	}
	return errors.New("finish_reason " + c.Choices[0].FinishReason + " is not an OpenAI value")
}
