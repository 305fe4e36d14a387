package external

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/bench/routing/routellm"
)

// TestLoad reads a few rows in each source's layout: a RouterBench
// prompt's question is its last block, rows without both grades and
// arena questions without both grades are left out.
func TestLoad(t *testing.T) {
	got, err := load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	want := []routellm.Set{
		{Name: ARC, Items: []routellm.Item{
			{Prompt: "What melts ice?\nA) heat\nB) cold\nAnswer:", Strong: 1, Weak: 0},
			{Prompt: "Q?\nA) a\nAnswer:", Strong: 0, Weak: 1},
		}},
		{Name: Winogrande, Items: []routellm.Item{{Prompt: "The _ was heavy.\nA) box\nB) feather\nAnswer:", Strong: 1, Weak: 1}}},
		{Name: Arena, Items: []routellm.Item{
			{Prompt: "Explain monads.", Strong: 9, Weak: 4},
			{Prompt: "Write a haiku.", Strong: 8, Weak: 8},
		}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

// TestLoadChecksDigests: files other than the ones measured are refused,
// by name.
func TestLoadChecksDigests(t *testing.T) {
	_, err := Load("testdata")
	if err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("got %v, want a digest mismatch", err)
	}
}
