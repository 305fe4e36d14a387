// Command routing measures how much the cost-optimized router saves on
// RouteLLM's public router benchmarks (MT-Bench, GSM8K, MMLU) at 95 % of
// the strong model's quality, next to random and longest-prompt-first
// baselines, under a leave-one-benchmark-out protocol; then replays each
// benchmark as an app's traffic through a route that learns domain
// priors (routing.learn) from a simulated judge's verdicts.
//
//	go run ./bench/routing                             # print the report
//	go run ./bench/routing -write docs/BENCHMARKS.md   # and update the doc
//	go run ./bench/routing -part replay                # the replays only
//	go run ./bench/routing -part replay -score-half first   # development: see below
//	go run ./bench/routing -external DIR               # other public sets as training data
//	go run ./bench/routing -update-model filters/router/complexity/model.json
//
// The replays' reported figures are read over each replay's second half.
// -score-half first reads them over the first instead, for development:
// a setting or method of the learning is chosen on the first halves, so
// that the reported ones are never looked at to choose it. Such a run
// cannot -write.
//
// Run it from the repository root.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/benchdoc"
	"github.com/switchyard/switchyard/bench/routing/routellm"
	"github.com/switchyard/switchyard/bench/routing/train"
	"github.com/switchyard/switchyard/filters/router/complexity"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		slog.Error("bench/routing failed", "err", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("routing", flag.ContinueOnError)
	data := fs.String("data", "bench/routing/testdata/routellm", "RouteLLM evaluation data (verified against its SHA256SUMS)")
	write := fs.String("write", "", "also write the report into this Markdown file, each part between its own markers (routing-eval, routing-replay, routing-external)")
	updateModel := fs.String("update-model", "", "train the production model on all three benchmarks and write it to this file")
	updateCurve := fs.String("update-curve", "", "write the held-out quality curve (the worst benchmark's at each strong share) to this file")
	part := fs.String("part", "all", "what to measure: eval (the classifier, held out), replay (the learning router's replays) or all")
	external := fs.String("external", "", "instead, train the classifier also on the other public sets checked out in this directory (see docs/BENCHMARKS.md) and report what they change, held out")
	scoreHalf := fs.String("score-half", "second", "the half of each replay the replays' ranking figures are read over: second (reported) or first (development: choose settings on it, never on the reported half)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var h half
	switch *scoreHalf {
	case "second":
	case "first":
		if *write != "" {
			return fmt.Errorf("-score-half first is for development: its figures are not written into %s", *write)
		}
		h = firstHalf
	default:
		return fmt.Errorf("-score-half %q: want first or second", *scoreHalf)
	}
	evalPart, replayPart := *part == "all" || *part == "eval", *part == "all" || *part == "replay"
	if !evalPart && !replayPart {
		return fmt.Errorf("-part %q: want eval, replay or all", *part)
	}

	sets, err := routellm.Load(*data)
	if err != nil {
		return err
	}
	var benches []train.Benchmark
	var dropped []int
	for _, s := range sets {
		clean := s.Clean()
		dropped = append(dropped, len(s.Items)-len(clean.Items))
		benches = append(benches, train.NewBenchmark(clean))
	}

	if *external != "" {
		return runExternal(*external, benches, stdout, *write)
	}
	if *updateModel != "" {
		inSample, err := train.FitSelected(benches)
		if err != nil {
			return err
		}
		return writeModel(*updateModel, inSample)
	}
	// Each benchmark is scored, and replayed, by the model trained on the
	// other two.
	loos := make([]*complexity.Model, len(benches))
	for held := range benches {
		if loos[held], err = train.FitSelected(without(benches, held)); err != nil {
			return err
		}
	}
	if evalPart || *updateCurve != "" {
		r, err := evaluateAll(benches, loos, dropped)
		if err != nil {
			return err
		}
		if *updateCurve != "" {
			return writeCurve(*updateCurve, r.Results)
		}
		if err := emit(stdout, *write, section, r.render); err != nil {
			return err
		}
	}
	if !replayPart {
		return nil
	}
	r := replayReport{Date: time.Now().UTC().Format("2006-01-02"), Machine: benchdoc.Machine(), GoVersion: runtime.Version(), Load: loadAverage(), Half: h}
	for held, b := range benches {
		reps, err := replayBenchmark(b, loos[held], h)
		if err != nil {
			return err
		}
		r.Replays = append(r.Replays, reps...)
	}
	return emit(stdout, *write, replaySection, r.render)
}

// evaluateAll measures the classifier on each benchmark, held out.
func evaluateAll(benches []train.Benchmark, loos []*complexity.Model, dropped []int) (report, error) {
	inSample, err := train.FitSelected(benches)
	if err != nil {
		return report{}, err
	}
	shipped, err := complexity.DefaultModel()
	if err != nil {
		return report{}, err
	}
	r := report{
		Date:      time.Now().UTC().Format("2006-01-02"),
		Machine:   benchdoc.Machine(),
		GoVersion: runtime.Version(),
		Stale:     !sameModel(shipped, inSample),
		Load:      loadAverage(),
	}
	for held, b := range benches {
		res, err := evaluate(b, without(benches, held), loos[held], inSample)
		if err != nil {
			return report{}, err
		}
		res.Dropped = dropped[held]
		r.Results = append(r.Results, res)
	}
	return r, nil
}

// emit prints a report's section and, with a path, writes it there.
func emit(stdout io.Writer, path, name string, render func(io.Writer)) error {
	var out bytes.Buffer
	render(&out)
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if path != "" {
		return benchdoc.WriteSection(path, name, out.String())
	}
	return nil
}

func without(benches []train.Benchmark, held int) []train.Benchmark {
	var out []train.Benchmark
	for i, b := range benches {
		if i != held {
			out = append(out, b)
		}
	}
	return out
}

func writeModel(path string, m *complexity.Model) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writeCurve writes the curve quality targets are read off: at each
// strong share, the held-out quality of the worst benchmark.
func writeCurve(path string, results []result) error {
	c := complexity.Curve{Source: "go run ./bench/routing -update-curve: at each strong share 0, 0.01, …, 1, the lowest held-out (leave-one-benchmark-out) share of all-strong quality over the RouteLLM benchmarks"}
	for i := 0; i <= curvePoints; i++ {
		q := math.Inf(1)
		for _, res := range results {
			q = min(q, res.HeldCurve[i])
		}
		c.Quality = append(c.Quality, math.Round(q*1e4)/1e4)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// loadAverage is the machine's one-minute load average when the run
// starts ("" where the system does not tell): the decision times are wall
// times, which a busy shared machine stretches.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// sameModel reports whether the shipped model is the one training produces
// now; a stale model.json is flagged in the report.
func sameModel(a, b *complexity.Model) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
