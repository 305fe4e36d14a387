package routellm

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

const dataDir = "../testdata/routellm"

// TestLoadReferenceNumbers checks the loader against the figures the data's
// README publishes (after dropping contaminated rows, and with every row).
func TestLoadReferenceNumbers(t *testing.T) {
	sets, err := Load(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                   string
		wantN, wantAllN        int
		wantWeak, wantStrong   float64
		wantAllWeak, wantAllSt float64
		wantRandom, wantLength float64
	}{
		{name: MTBench, wantN: 72, wantAllN: 80, wantWeak: 8.2812, wantStrong: 9.2118, wantAllWeak: 8.3406, wantAllSt: 9.2281, wantRandom: 0.505, wantLength: 0.333},
		{name: GSM8K, wantN: 1307, wantAllN: 1319, wantWeak: 0.6373, wantStrong: 0.8577, wantAllWeak: 0.6384, wantAllSt: 0.8567, wantRandom: 0.805, wantLength: 0.676},
		{name: MMLU, wantN: 14037, wantAllN: 14042, wantWeak: 0.6809, wantStrong: 0.8059, wantAllWeak: 0.6808, wantAllSt: 0.8058, wantRandom: 0.678, wantLength: 0.527},
	}
	if len(sets) != len(tests) {
		t.Fatalf("got %d sets, want %d", len(sets), len(tests))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := sets[i]
			if all.Name != tt.name {
				t.Fatalf("set %d is %q, want %q", i, all.Name, tt.name)
			}
			if got := len(all.Items); got != tt.wantAllN {
				t.Errorf("all rows: got n=%d, want %d", got, tt.wantAllN)
			}
			w, s := all.Means()
			near(t, "all rows weak", w, tt.wantAllWeak, 5e-5)
			near(t, "all rows strong", s, tt.wantAllSt, 5e-5)

			clean := all.Clean()
			if got := len(clean.Items); got != tt.wantN {
				t.Errorf("clean: got n=%d, want %d", got, tt.wantN)
			}
			w, s = clean.Means()
			near(t, "weak", w, tt.wantWeak, 5e-5)
			near(t, "strong", s, tt.wantStrong, 5e-5)
			near(t, "random share", (0.95*s-w)/(s-w), tt.wantRandom, 5e-4)
			near(t, "longest-prompt-first share", longestFirstShare(clean), tt.wantLength, 5e-4)
		})
	}
}

// longestFirstShare is the README's reference computation, written out
// independently of package sweep: send the k longest prompts (characters,
// ties in file order) to the strong model, smallest k reaching 95 %.
func longestFirstShare(s Set) float64 {
	n := len(s.Items)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return utf8.RuneCountInString(s.Items[order[a]].Prompt) > utf8.RuneCountInString(s.Items[order[b]].Prompt)
	})
	weak, strong := s.Means()
	total := weak * float64(n)
	for k := 0; k < n; k++ {
		if total/float64(n) >= 0.95*strong {
			return float64(k) / float64(n)
		}
		it := s.Items[order[k]]
		total += it.Strong - it.Weak
	}
	return 1
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s: got %.5f, want %.5f", what, got, want)
	}
}

func TestLoadShape(t *testing.T) {
	sets, err := Load(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	subjects := map[string]bool{}
	for _, it := range sets[2].Items {
		subjects[it.Group] = true
	}
	if got := len(subjects); got != 57 {
		t.Errorf("MMLU subjects: got %d, want 57", got)
	}
	if got, want := sets[0].Items[0].Group, "writing"; got != want {
		t.Errorf("first MT-Bench category: got %q, want %q", got, want)
	}
	if got := sets[0].Items[0].Prompt; !strings.HasPrefix(got, "Compose an engaging travel blog post") {
		t.Errorf("first MT-Bench prompt: got %q, want turn 1 of question 81", got)
	}
}

// copyData copies the shipped data to a temporary directory so a test can
// damage it.
func copyData(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dataDir, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(dir string) error
		wantErr string
	}{
		{
			name: "changed data file",
			damage: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "gsm8k", "gsm8k_responses.csv"), []byte("prompt\n"), 0o644)
			},
			wantErr: "gsm8k/gsm8k_responses.csv: sha256",
		},
		{
			name:    "missing data file",
			damage:  func(dir string) error { return os.Remove(filepath.Join(dir, "mt_bench", "question.jsonl")) },
			wantErr: "question.jsonl",
		},
		{
			name: "unlisted extra file",
			damage: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "mmlu", "responses", "mmlu_extra.csv"), []byte("prompt\n"), 0o644)
			},
			wantErr: "mmlu_extra.csv is not listed in SHA256SUMS",
		},
		{
			name: "malformed sums",
			damage: func(dir string) error {
				return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte("nonsense\n"), 0o644)
			},
			wantErr: "SHA256SUMS line 1: malformed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyData(t)
			if err := tt.damage(dir); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
