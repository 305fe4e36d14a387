package complexity

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func user(text string) *Request { return &Request{Messages: []Message{{Role: "user", Text: text}}} }

func TestCountText(t *testing.T) {
	tests := []struct {
		name string
		text string
		want textCounts
	}{
		{name: "empty", text: "", want: textCounts{}},
		{
			name: "english question with numbers",
			text: "A train goes 3.5 km in 1,000 s. How fast is it?",
			want: textCounts{words: 10, letters: 26, numbers: 2, sentences: 2, questions: 1},
		},
		{
			name: "digits glued to letters are words",
			text: "H2O and x2",
			want: textCounts{words: 3, letters: 6, sentences: 1},
		},
		{
			name: "math symbols and lines",
			text: "x+y = 4z\nx*y = 4z^2",
			want: textCounts{words: 6, letters: 6, numbers: 3, math: 5, lines: 1, sentences: 1},
		},
		{
			name: "code fence",
			text: "```go\nfmt.Println()\n```",
			want: textCounts{words: 3, letters: 12, fences: 2, lines: 2, sentences: 1},
		},
		{
			name: "chinese counts characters and full-width punctuation",
			text: "请一步一步证明这个定理。为什么？",
			want: textCounts{cjk: 14, sentences: 2, questions: 1},
		},
		{
			name: "accented latin words",
			text: "Démontre que l'équation est vraie.",
			want: textCounts{words: 6, letters: 28, sentences: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := countText(tt.text)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(textCounts{})); diff != "" {
				t.Errorf("countText(%q) mismatch (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestMarkers(t *testing.T) {
	tests := []struct {
		name string
		text string
		want map[group]int
	}{
		{name: "english multi-step", text: "Explain why, step by step, and prove it.", want: map[group]int{groupMultiStep: 3}},
		{name: "word boundary", text: "Improve the approval process", want: map[group]int{}},
		{name: "prefix marker", text: "Derivation of the derivative", want: map[group]int{groupMultiStep: 1, groupQuant: 1}},
		{name: "upper case folds", text: "STEP BY STEP", want: map[group]int{groupMultiStep: 1}},
		{name: "chinese", text: "请一步一步推导并证明，首先计算概率，然后写代码", want: map[group]int{groupMultiStep: 3, groupSequence: 2, groupQuant: 2, groupCode: 1}},
		{name: "spanish", text: "Explica por qué, paso a paso: ¿cuántos hay?", want: map[group]int{groupMultiStep: 3, groupQuant: 1}},
		{name: "french with capital accent", text: "Étape par étape, démontre le théorème", want: map[group]int{groupMultiStep: 2, groupExpert: 1}},
		{name: "german", text: "Erkläre warum, Schritt für Schritt, und berechne die Wahrscheinlichkeit", want: map[group]int{groupMultiStep: 3, groupQuant: 2}},
		{name: "japanese", text: "ステップバイステップで証明して、確率を計算", want: map[group]int{groupMultiStep: 2, groupQuant: 2}},
		{name: "open-ended", text: "Write a poem and a short story", want: map[group]int{groupOpenEnded: 3}},
		{name: "shared word counts once per group", text: "分析", want: map[group]int{groupMultiStep: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var counts [numGroups]int
			markers().count(tt.text, &counts)
			var want [numGroups]int
			for g, n := range tt.want {
				want[g] = n
			}
			if counts != want {
				t.Errorf("count(%q): got %v, want %v", tt.text, counts, want)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name string
		req  *Request
		want map[int]float64 // features not listed must be 0
	}{
		{name: "empty request", req: &Request{}, want: map[int]float64{}},
		{
			name: "task is the last user message; the rest is context",
			req: &Request{Tools: 3, Messages: []Message{
				{Role: "system", Text: "Be brief."},
				{Role: "user", Text: "Hi"},
				{Role: "assistant", Text: "Hello!"},
				{Role: "user", Text: "Why?"},
				{Role: "tool", Text: "{}"},
			}},
			want: map[int]float64{
				fChars: math.Log1p(4), fWords: math.Log1p(1), fSentences: math.Log1p(1), fQuestions: math.Log1p(1),
				fWordLength: 3, fTurns: math.Log1p(3), fContextChars: math.Log1p(2 + 6 + 2), fSystemChars: math.Log1p(9),
				fTools: math.Log1p(3),
			},
		},
		{
			name: "code block and markers",
			req:  user("Implement it:\n```\nx = 1\n```"),
			want: map[int]float64{
				fChars: math.Log1p(27), fWords: math.Log1p(3), fSentences: math.Log1p(1), fNumbers: math.Log1p(1),
				fNumberDensity: 1.0 / 8, fMathSymbols: math.Log1p(1), fCodeBlocks: math.Log1p(1), fWordLength: 12.0 / 3,
				fLines: math.Log1p(3), fCode: math.Log1p(3), // implement, two fences
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Extract(tt.req, 0)
			var want Features
			for i, v := range tt.want {
				want[i] = v
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
				t.Errorf("Extract mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExtractScan checks that a cut text keeps its proportions: a text
// read only in part scales its counts up to the whole.
func TestExtractScan(t *testing.T) {
	text := ""
	for range 100 {
		text += "Solve 12 + 30. "
	}
	full := Extract(user(text), len(text))
	cut := Extract(user(text), len(text)/4)
	for _, i := range []int{fChars, fWords, fNumbers, fMathSymbols} {
		if math.Abs(full[i]-cut[i]) > 0.02 {
			t.Errorf("%s: got %.3f from a quarter of the text, want about %.3f", featureNames[i], cut[i], full[i])
		}
	}
}

func TestFeatureNamesComplete(t *testing.T) {
	seen := map[string]bool{}
	for i, name := range FeatureNames() {
		if name == "" || seen[name] {
			t.Errorf("feature %d: got name %q, want a unique non-empty name", i, name)
		}
		seen[name] = true
	}
}
