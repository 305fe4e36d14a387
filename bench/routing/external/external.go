// Package external reads public router data beyond RouteLLM's own sets,
// for trying it as training data for the complexity classifier: two
// RouterBench subsets with RouteLLM's exact pair (GPT-4 1106 and Mixtral
// 8x7B), ARC-Challenge and Winogrande as RouterDC ships them, and the
// 300 Chatbot Arena prompts of arena-hard-auto's arena-bench-v1 with
// GPT-4's single-answer grades of both models.
//
// The files are not in this repository; Load reads them from a
// directory laid out as:
//
//	routerbench_zs/   RouterDC's datasets/routerbench_zs (commit 0e63989c)
//	arena-bench-v1/   arena-hard-auto's data/arena-bench-v1 (commit 4a705dd6)
//
// and checks each file against the SHA-256 it was measured on.
package external

import (
	"bufio"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/bench/routing/routellm"
)

// Set names, in the order Load returns them.
const (
	ARC        = "ARC-Challenge"
	Winogrande = "Winogrande"
	Arena      = "Arena"
)

// sums are the files' SHA-256 digests, by path within the directory.
var sums = map[string]string{
	"routerbench_zs/arc_challenge_train.csv":                         "59e044850520be06f74dd9766b9ab4621d783f7fa5269d7dda118b9abb115d78",
	"routerbench_zs/arc_challenge_test.csv":                          "7bffb55faca2e1f9d19f7197c652884780a1e0f7fe14bad5b2b1c6afbe7a6769",
	"routerbench_zs/winograde_train.csv":                             "f6d54caab59bebb9facf3407c515a07a20faf4e75c639b7e91988ceaf312906a",
	"routerbench_zs/winograde_test.csv":                              "de7c8689d4b682c860b660988808ee2e40366b12076811e7891081facec4a2e1",
	"arena-bench-v1/question.jsonl":                                  "e2995f6dac278d8c20d04148c490e12e9ab2c79245f8568c673823e4df53819a",
	"arena-bench-v1/model_judgment/gpt-4-turbo.jsonl":                "2a9dceb7fb8474b356a3ca682bdd7a2647f59bd9081c82d4760ecff1a665bcc6",
	"arena-bench-v1/model_judgment/Mixtral-8x7B-Instruct-v0.1.jsonl": "22eeab7db224c12f28f7ce1547517161344a37533be0b0f4ea1b94b29d430f2d",
}

// RouterBench's column names of RouteLLM's pair.
const (
	benchStrong = "gpt-4-1106-preview"
	benchWeak   = "mistralai/mixtral-8x7b-chat"
)

// Load checks the files in dir against the digests they were measured
// on and reads the three sets. Rows without both models' grades are left
// out.
func Load(dir string) ([]routellm.Set, error) {
	for rel, want := range sums {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return nil, fmt.Errorf("external: %w", err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("external: %s: SHA-256 %s, want %s", rel, got, want)
		}
	}
	return load(dir)
}

func load(dir string) ([]routellm.Set, error) {
	var sets []routellm.Set
	for _, s := range []struct{ name, file string }{{ARC, "arc_challenge"}, {Winogrande, "winograde"}} {
		set := routellm.Set{Name: s.name}
		for _, split := range []string{"train", "test"} {
			items, err := readRouterBench(dir, "routerbench_zs/"+s.file+"_"+split+".csv")
			if err != nil {
				return nil, err
			}
			set.Items = append(set.Items, items...)
		}
		sets = append(sets, set)
	}
	arena, err := readArena(dir)
	if err != nil {
		return nil, err
	}
	return append(sets, arena), nil
}

func open(dir, rel string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	return b, nil
}

// readRouterBench reads a RouterBench CSV: a prompt column holding a
// Python list of one string (few-shot examples, then the question, split
// by blank lines) and one 0/1 grade column per model. A router sees the
// question: the last block.
func readRouterBench(dir, rel string) ([]routellm.Item, error) {
	b, err := open(dir, rel)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(string(b)))
	col, _, err := routellm.Columns(r, "prompt", benchStrong, benchWeak)
	if err != nil {
		return nil, fmt.Errorf("external: %s: %w", rel, err)
	}
	var items []routellm.Item
	for row := 2; ; row++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return items, nil
		}
		if err != nil {
			return nil, fmt.Errorf("external: %s: %w", rel, err)
		}
		if rec[col[benchStrong]] == "" || rec[col[benchWeak]] == "" {
			continue
		}
		parts, err := PythonStrings(rec[col["prompt"]])
		if err != nil || len(parts) != 1 {
			return nil, fmt.Errorf("external: %s: row %d: the prompt is not a Python list of one string", rel, row)
		}
		blocks := strings.Split(strings.TrimSpace(parts[0]), "\n\n")
		it := routellm.Item{Prompt: blocks[len(blocks)-1]}
		if it.Strong, err = strconv.ParseFloat(rec[col[benchStrong]], 64); err != nil {
			return nil, fmt.Errorf("external: %s: row %d: %s: %w", rel, row, benchStrong, err)
		}
		if it.Weak, err = strconv.ParseFloat(rec[col[benchWeak]], 64); err != nil {
			return nil, fmt.Errorf("external: %s: row %d: %s: %w", rel, row, benchWeak, err)
		}
		items = append(items, it)
	}
}

// readArena reads arena-bench-v1: each question's first turn and GPT-4's
// 1–10 grade of each model's answer (gpt-4-turbo.jsonl grades
// gpt-4-1106-preview). Questions a grade is missing for are left out.
func readArena(dir string) (routellm.Set, error) {
	set := routellm.Set{Name: Arena}
	grades := map[string]map[string]float64{}
	for _, file := range []string{"gpt-4-turbo", "Mixtral-8x7B-Instruct-v0.1"} {
		grades[file] = map[string]float64{}
		err := eachLine(dir, "arena-bench-v1/model_judgment/"+file+".jsonl", func(line []byte) error {
			var j struct {
				ID    string   `json:"question_id"`
				Score *float64 `json:"score"`
			}
			if err := json.Unmarshal(line, &j); err != nil {
				return err
			}
			if j.Score != nil {
				grades[file][j.ID] = *j.Score
			}
			return nil
		})
		if err != nil {
			return set, err
		}
	}
	err := eachLine(dir, "arena-bench-v1/question.jsonl", func(line []byte) error {
		var q struct {
			ID    string   `json:"question_id"`
			Turns []string `json:"turns"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		strong, okS := grades["gpt-4-turbo"][q.ID]
		weak, okW := grades["Mixtral-8x7B-Instruct-v0.1"][q.ID]
		if okS && okW && len(q.Turns) > 0 {
			set.Items = append(set.Items, routellm.Item{Prompt: q.Turns[0], Strong: strong, Weak: weak})
		}
		return nil
	})
	return set, err
}

func eachLine(dir, rel string, each func([]byte) error) error {
	b, err := open(dir, rel)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if err := each(sc.Bytes()); err != nil {
			return fmt.Errorf("external: %s:%d: %w", rel, n, err)
		}
	}
	return sc.Err()
}
