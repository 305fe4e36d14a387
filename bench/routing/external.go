package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/bench/routing/train"
)

// externalSets are the other public sets issue 34 asks to try as
// training data for the classifier, each a file of the -external
// directory: one JSON object a line, {"prompt", "weak", "strong"} (the
// weak and strong models' quality on it, RouteLLM's pair). They are not
// in the repository (docs/BENCHMARKS.md says why and how to make them),
// so only a run that names the directory reads them.
var externalSets = [][]string{{"arc", "winogrande"}, {"arena"}, {"arc", "winogrande", "arena"}}

// runExternal trains the classifier on two RouteLLM benchmarks plus
// each combination of the external sets, and prints the third's
// held-out APGR next to the one without them.
func runExternal(dir string, benches []train.Benchmark, w io.Writer) error {
	loaded := map[string]train.Benchmark{}
	for _, combo := range externalSets {
		for _, name := range combo {
			if _, ok := loaded[name]; ok {
				continue
			}
			set, err := loadExternal(filepath.Join(dir, name+".jsonl"), name)
			if err != nil {
				return err
			}
			loaded[name] = train.NewBenchmark(set)
		}
	}
	fmt.Fprintf(w, "| Trained on the other two and | %s |\n|---|", benchNames(benches))
	for range benches {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w)
	for _, combo := range append([][]string{nil}, externalSets...) {
		var extra []train.Benchmark
		label := "nothing more"
		for i, name := range combo {
			extra = append(extra, loaded[name])
			if i == 0 {
				label = ""
			} else {
				label += " + "
			}
			label += fmt.Sprintf("%s (%d)", name, len(loaded[name].Set.Items))
		}
		fmt.Fprintf(w, "| %s |", label)
		for held, b := range benches {
			m, err := train.FitSelected(append(without(benches, held), extra...))
			if err != nil {
				return err
			}
			fmt.Fprintf(w, " %.3f |", b.Scored(m).APGR(apgrSteps))
		}
		fmt.Fprintln(w)
	}
	return nil
}

func benchNames(benches []train.Benchmark) string {
	s := ""
	for i, b := range benches {
		if i > 0 {
			s += " | "
		}
		s += b.Set.Name + " held out"
	}
	return s
}

// loadExternal reads one external set.
func loadExternal(path, name string) (routellm.Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return routellm.Set{}, err
	}
	defer f.Close()
	set := routellm.Set{Name: name}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		var it struct {
			Prompt       string  `json:"prompt"`
			Weak, Strong float64 `json:"-"`
		}
		var q struct {
			Weak   *float64 `json:"weak"`
			Strong *float64 `json:"strong"`
		}
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			return set, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil || q.Weak == nil || q.Strong == nil || it.Prompt == "" {
			return set, fmt.Errorf("%s:%d: want {\"prompt\", \"weak\", \"strong\"}", path, n)
		}
		set.Items = append(set.Items, routellm.Item{Prompt: it.Prompt, Weak: *q.Weak, Strong: *q.Strong})
	}
	return set, sc.Err()
}
