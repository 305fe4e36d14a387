package train

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

func load(t *testing.T) []Benchmark {
	t.Helper()
	sets, err := routellm.Load("../testdata/routellm")
	if err != nil {
		t.Fatal(err)
	}
	var out []Benchmark
	for _, s := range sets {
		out = append(out, NewBenchmark(s.Clean()))
	}
	return out
}

// synthetic builds a benchmark where exactly the prompts with a question
// mark gain from the strong model, so a fit must learn that feature.
func synthetic(name string, n int) Benchmark {
	s := routellm.Set{Name: name}
	for i := range n {
		// Both kinds have the same length, so length alone cannot rank them.
		it := routellm.Item{Prompt: fmt.Sprintf("Item %03d states a fact.", i), Weak: 1, Strong: 1}
		if i%4 == 0 {
			it = routellm.Item{Prompt: fmt.Sprintf("Item %03d: is it a fact?", i), Weak: 0, Strong: 1}
		}
		s.Items = append(s.Items, it)
	}
	return NewBenchmark(s)
}

func TestFitLearnsSignal(t *testing.T) {
	b := synthetic("synthetic", 40)
	m, err := Fit([]Benchmark{b}, 0.005)
	if err != nil {
		t.Fatal(err)
	}
	start := make([]float64, complexity.NumFeatures)
	for i, name := range complexity.FeatureNames() {
		start[i] = Start[name]
	}
	if got, base := savings(b, m.Weights), savings(b, start); got != 0.75 || base >= got {
		t.Errorf("savings: got %v (start %v), want 0.75 (the ten tied questions go strong together)", got, base)
	}
}

func TestFitDeterministic(t *testing.T) {
	benches := []Benchmark{synthetic("a", 40), synthetic("b", 24)}
	first, err := FitSelected(benches)
	if err != nil {
		t.Fatal(err)
	}
	again, err := FitSelected(benches)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("two fits differ (-first +again):\n%s", diff)
	}
}

func TestFitErrors(t *testing.T) {
	if _, err := Fit(nil, 0.01); err == nil {
		t.Error("Fit(nil): got no error, want one")
	}
}

// TestShippedModelIsReproducible retrains the production model from the
// shipped data and compares it with model.json, byte for byte.
func TestShippedModelIsReproducible(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("retrains on all benchmarks (about 20 s); run without -short and -race")
	}
	got, err := FitSelected(load(t))
	if err != nil {
		t.Fatal(err)
	}
	want, err := complexity.DefaultModel()
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("model.json is stale: got\n%s\nwant\n%s\nrun go run ./bench/routing -update-model filters/router/complexity/model.json", gotJSON, wantJSON)
	}
}
