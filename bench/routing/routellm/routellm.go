package routellm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Model names as they appear in the data files.
const (
	WeakModel   = "mistralai/Mixtral-8x7B-Instruct-v0.1"
	StrongModel = "gpt-4-1106-preview"
)

// Benchmark names, in the order Load returns them.
const (
	MTBench = "MT-Bench"
	GSM8K   = "GSM8K"
	MMLU    = "MMLU"
)

// Item is one evaluation prompt with the quality each model reached on it.
type Item struct {
	// Prompt is what a router sees: the question, or turn 1 for MT-Bench.
	Prompt string
	// Group is the MT-Bench category or the MMLU subject; empty for GSM8K.
	Group string
	// Weak and Strong are the models' quality on this prompt: 0 or 1 for
	// GSM8K and MMLU, the mean of both turns' judge scores (1–10) for MT-Bench.
	Weak, Strong float64
	// Contaminated marks prompts RouteLLM found near-duplicated in its
	// router training data; comparisons with the paper drop them.
	Contaminated bool
}

// Set is one benchmark's items, in file order.
type Set struct {
	Name  string
	Items []Item
}

// Clean returns the set without its contaminated items.
func (s Set) Clean() Set {
	out := Set{Name: s.Name, Items: make([]Item, 0, len(s.Items))}
	for _, it := range s.Items {
		if !it.Contaminated {
			out.Items = append(out.Items, it)
		}
	}
	return out
}

// Means returns the weak and the strong model's mean quality over the set.
func (s Set) Means() (weak, strong float64) {
	if len(s.Items) == 0 {
		return 0, 0
	}
	for _, it := range s.Items {
		weak += it.Weak
		strong += it.Strong
	}
	n := float64(len(s.Items))
	return weak / n, strong / n
}

// Load verifies dir against dir/SHA256SUMS and reads the three benchmarks,
// returned in the order MT-Bench, GSM8K, MMLU, contaminated items included.
func Load(dir string) ([]Set, error) {
	listed, err := verify(dir)
	if err != nil {
		return nil, err
	}
	mt, err := loadMTBench(dir)
	if err != nil {
		return nil, err
	}
	gsm, err := loadGSM8K(dir)
	if err != nil {
		return nil, err
	}
	mmlu, err := loadMMLU(dir, listed)
	if err != nil {
		return nil, err
	}
	return []Set{mt, gsm, mmlu}, nil
}

// verify checks every file named in SHA256SUMS and returns the listed paths,
// relative to dir, so the loader can refuse files the sums do not cover.
func verify(dir string) (map[string]bool, error) {
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return nil, fmt.Errorf("routellm: %w", err)
	}
	listed := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		want, name, ok := strings.Cut(line, "  ")
		if !ok || len(want) != sha256.Size*2 {
			return nil, fmt.Errorf("routellm: SHA256SUMS line %d: malformed", i+1)
		}
		name = filepath.ToSlash(filepath.Clean(name))
		got, err := fileSum(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("routellm: %w", err)
		}
		if got != want {
			return nil, fmt.Errorf("routellm: %s: sha256 %s, want %s", name, got, want)
		}
		listed[name] = true
	}
	return listed, nil
}

func fileSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func loadMTBench(dir string) (Set, error) {
	set := Set{Name: MTBench}
	type question struct {
		ID       int      `json:"question_id"`
		Category string   `json:"category"`
		Turns    []string `json:"turns"`
	}
	var questions []question
	err := readJSONL(filepath.Join(dir, "mt_bench", "question.jsonl"), func(line []byte) error {
		var q question
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		if len(q.Turns) == 0 {
			return fmt.Errorf("question %d has no turns", q.ID)
		}
		questions = append(questions, q)
		return nil
	})
	if err != nil {
		return set, err
	}

	type key struct {
		id    int
		model string
	}
	sum := map[key]float64{}
	count := map[key]int{}
	err = readJSONL(filepath.Join(dir, "mt_bench", "judgements.jsonl"), func(line []byte) error {
		var j struct {
			ID    int     `json:"question_id"`
			Model string  `json:"model"`
			Score float64 `json:"score"`
		}
		if err := json.Unmarshal(line, &j); err != nil {
			return err
		}
		if j.Score < 1 || j.Score > 10 {
			return fmt.Errorf("question %d: score %v outside 1–10", j.ID, j.Score)
		}
		k := key{j.ID, j.Model}
		sum[k] += j.Score
		count[k]++
		return nil
	})
	if err != nil {
		return set, err
	}

	contaminated, err := contaminatedPrompts(filepath.Join(dir, "mt_bench", "contaminated_prompts.jsonl"))
	if err != nil {
		return set, err
	}
	for _, q := range questions {
		it := Item{Prompt: q.Turns[0], Group: q.Category}
		for _, m := range []struct {
			name string
			dst  *float64
		}{{WeakModel, &it.Weak}, {StrongModel, &it.Strong}} {
			k := key{q.ID, m.name}
			if count[k] != len(q.Turns) {
				return set, fmt.Errorf("routellm: mt_bench question %d: %d judgements for %s, want %d", q.ID, count[k], m.name, len(q.Turns))
			}
			*m.dst = sum[k] / float64(count[k])
		}
		for _, t := range q.Turns {
			if contaminated[t] {
				it.Contaminated = true
			}
		}
		set.Items = append(set.Items, it)
	}
	return set, nil
}

func loadGSM8K(dir string) (Set, error) {
	contaminated, err := contaminatedPrompts(filepath.Join(dir, "gsm8k", "contaminated_prompts.jsonl"))
	if err != nil {
		return Set{}, err
	}
	items, err := readResponses(filepath.Join(dir, "gsm8k", "gsm8k_responses.csv"), "", contaminated)
	return Set{Name: GSM8K, Items: items}, err
}

func loadMMLU(dir string, listed map[string]bool) (Set, error) {
	set := Set{Name: MMLU}
	contaminated, err := contaminatedPrompts(filepath.Join(dir, "mmlu", "contaminated_prompts.jsonl"))
	if err != nil {
		return set, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "mmlu", "responses", "mmlu_*.csv"))
	if err != nil {
		return set, fmt.Errorf("routellm: %w", err)
	}
	if len(files) == 0 {
		return set, errors.New("routellm: no mmlu/responses/mmlu_*.csv files")
	}
	sort.Strings(files)
	for _, f := range files {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return set, fmt.Errorf("routellm: %w", err)
		}
		if !listed[filepath.ToSlash(rel)] {
			return set, fmt.Errorf("routellm: %s is not listed in SHA256SUMS", rel)
		}
		subject := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "mmlu_"), ".csv")
		items, err := readResponses(f, subject, contaminated)
		if err != nil {
			return set, err
		}
		set.Items = append(set.Items, items...)
	}
	return set, nil
}

// readResponses reads a CSV with a prompt column and one True/False
// correctness column per model.
func readResponses(path, group string, contaminated map[string]bool) ([]Item, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("routellm: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	col, width, err := Columns(r, "prompt", WeakModel, StrongModel)
	if err != nil {
		return nil, fmt.Errorf("routellm: %s: %w", path, err)
	}
	var items []Item
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return items, nil
		}
		if err != nil {
			return nil, fmt.Errorf("routellm: %s: %w", path, err)
		}
		if len(rec) != width {
			return nil, fmt.Errorf("routellm: %s: row %d has %d fields, want %d", path, len(items)+2, len(rec), width)
		}
		it := Item{Prompt: rec[col["prompt"]], Group: group}
		it.Contaminated = contaminated[it.Prompt]
		if it.Weak, err = correctness(rec[col[WeakModel]]); err != nil {
			return nil, fmt.Errorf("routellm: %s: row %d: %w", path, len(items)+2, err)
		}
		if it.Strong, err = correctness(rec[col[StrongModel]]); err != nil {
			return nil, fmt.Errorf("routellm: %s: row %d: %w", path, len(items)+2, err)
		}
		items = append(items, it)
	}
}

func correctness(s string) (float64, error) {
	switch s {
	case "True":
		return 1, nil
	case "False":
		return 0, nil
	}
	return 0, fmt.Errorf("correctness %q, want True or False", s)
}

func contaminatedPrompts(path string) (map[string]bool, error) {
	out := map[string]bool{}
	err := readJSONL(path, func(line []byte) error {
		var c struct {
			EvalPrompt string `json:"eval_prompt"`
		}
		if err := json.Unmarshal(line, &c); err != nil {
			return err
		}
		out[c.EvalPrompt] = true
		return nil
	})
	return out, err
}

func readJSONL(path string, each func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("routellm: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := each(line); err != nil {
			return fmt.Errorf("routellm: %s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("routellm: %s: %w", path, err)
	}
	return nil
}

// Columns reads a CSV file's header and returns each column's index by
// name and how many columns it has; it fails when one of need is missing.
func Columns(r *csv.Reader, need ...string) (map[string]int, int, error) {
	header, err := r.Read()
	if err != nil {
		return nil, 0, fmt.Errorf("header: %w", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, name := range need {
		if _, ok := col[name]; !ok {
			return nil, 0, fmt.Errorf("no %q column", name)
		}
	}
	return col, len(header), nil
}
