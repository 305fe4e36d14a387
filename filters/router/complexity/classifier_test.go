package complexity

import (
	"math"
	"strings"
	"testing"
)

func newClassifier(t testing.TB, cfg Config) *Classifier {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestScoreDeterministic(t *testing.T) {
	c := newClassifier(t, Config{})
	for _, text := range []string{"", "hi", "Prove that there are infinitely many primes, step by step.", strings.Repeat("请一步一步推导。", 50)} {
		first := c.Score(user(text))
		for range 3 {
			if got := c.Score(user(text)); got != first {
				t.Errorf("Score(%q): got %v, then %v", text, first, got)
			}
		}
		other := newClassifier(t, Config{})
		if got := other.Score(user(text)); got != first {
			t.Errorf("Score(%q) on a second classifier: got %v, want %v", text, got, first)
		}
	}
}

// TestScoreOrdersByKind checks the shipped model on prompts whose order
// nobody would dispute.
func TestScoreOrdersByKind(t *testing.T) {
	c := newClassifier(t, Config{})
	tests := []struct {
		name         string
		easy, harder string
	}{
		{
			name:   "greeting vs proof",
			easy:   "Hello! Write a short poem about spring.",
			harder: "Prove step by step that the sum of the first n odd numbers is n^2, and explain why the induction works.",
		},
		{
			name:   "chinese chat vs chinese derivation",
			easy:   "你好，给我写一首关于春天的诗。",
			harder: "请一步一步推导这个方程的解：如果 x+y=10 且 x*y=21，那么 x 和 y 各是多少？并证明答案唯一。",
		},
		{
			name:   "short vs long multi-step code task",
			easy:   "Translate 'thank you' into French.",
			harder: "Implement a function in Python that parses a CSV file, then computes the average of each numeric column, and explain why your algorithm runs in linear time. It must handle quoted fields and must not use the csv module.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			easy, harder := c.Score(user(tt.easy)), c.Score(user(tt.harder))
			if easy >= harder {
				t.Errorf("got easy %.3f ≥ harder %.3f, want easy < harder", easy, harder)
			}
		})
	}
}

func TestConversationAndToolsRaiseScore(t *testing.T) {
	c := newClassifier(t, Config{})
	base := user("Which option is cheaper for this trip?")
	withTools := &Request{Messages: base.Messages, Tools: 4}
	withHistory := &Request{Messages: []Message{
		{Role: "system", Text: "You are a travel agent."},
		{Role: "user", Text: "I fly from Paris to Tokyo in May."},
		{Role: "assistant", Text: "Here are three itineraries with prices and stops."},
		base.Messages[0],
	}}
	s := c.Score(base)
	if got := c.Score(withTools); got <= s {
		t.Errorf("with tools: got %.3f, want above %.3f", got, s)
	}
	if got := c.Score(withHistory); got <= s {
		t.Errorf("with history: got %.3f, want above %.3f", got, s)
	}
}

func TestLevel(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		score float64
		want  Level
	}{
		{name: "default simple", score: 0.39, want: Simple},
		{name: "default medium at threshold", score: 0.4, want: Medium},
		{name: "default medium", score: 0.69, want: Medium},
		{name: "default complex at threshold", score: 0.7, want: Complex},
		{name: "custom thresholds", cfg: Config{MediumAt: 0.2, ComplexAt: 0.9}, score: 0.5, want: Medium},
		{name: "custom complex", cfg: Config{MediumAt: 0.2, ComplexAt: 0.9}, score: 0.95, want: Complex},
		{name: "equal thresholds skip medium", cfg: Config{MediumAt: 0.5, ComplexAt: 0.5}, score: 0.5, want: Complex},
		{name: "complex at 1 only for the top", cfg: Config{ComplexAt: 1}, score: 0.99, want: Medium},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClassifier(t, tt.cfg)
			if got := c.Level(tt.score); got != tt.want {
				t.Errorf("Level(%v): got %v, want %v", tt.score, got, tt.want)
			}
		})
	}
}

func TestLevelText(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    Level
		wantErr bool
	}{
		{name: "simple", text: "simple", want: Simple},
		{name: "medium", text: "medium", want: Medium},
		{name: "complex", text: "complex", want: Complex},
		{name: "unknown", text: "hard", wantErr: true},
		{name: "case matters", text: "Complex", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Level
			err := got.UnmarshalText([]byte(tt.text))
			if (err != nil) != tt.wantErr {
				t.Fatalf("UnmarshalText(%q): got error %v, want error %v", tt.text, err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got != tt.want {
				t.Errorf("UnmarshalText(%q): got %v, want %v", tt.text, got, tt.want)
			}
			back, err := got.MarshalText()
			if err != nil || string(back) != tt.text {
				t.Errorf("MarshalText: got %q, %v, want %q", back, err, tt.text)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "zero value takes defaults", cfg: Config{}},
		{name: "explicit", cfg: Config{MediumAt: 0.3, ComplexAt: 0.8, MaxScanBytes: 4096}},
		{name: "medium above one", cfg: Config{MediumAt: 1.5, ComplexAt: 1}, wantErr: "medium_at: 1.5 is outside [0, 1]"},
		{name: "negative complex", cfg: Config{ComplexAt: -0.1}, wantErr: "complex_at: -0.1 is outside [0, 1]"},
		{name: "medium above complex", cfg: Config{MediumAt: 0.8}, wantErr: "medium_at: 0.8 is above complex_at 0.7"},
		{name: "negative scan", cfg: Config{MaxScanBytes: -1}, wantErr: "max_scan_bytes: -1 is negative"},
		{name: "bad model", cfg: Config{Model: &Model{}}, wantErr: "model has 0 features"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("got error %v, want none", err)
				}
				if _, err := New(tt.cfg); err != nil {
					t.Errorf("New: got error %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
			if _, err := New(tt.cfg); err == nil {
				t.Errorf("New: got no error, want one containing %q", tt.wantErr)
			}
		})
	}
}

func testModel(weights map[int]float64, quantiles ...float64) *Model {
	m := &Model{Features: FeatureNames(), Weights: make([]float64, NumFeatures), Quantiles: quantiles}
	for i, w := range weights {
		m.Weights[i] = w
	}
	return m
}

func TestCalibrate(t *testing.T) {
	m := testModel(nil, 0, 1, 1, 1, 4)
	tests := []struct {
		name string
		raw  float64
		want float64
	}{
		{name: "below all", raw: -5, want: 0},
		{name: "lowest quantile", raw: 0, want: 0},
		{name: "interpolated", raw: 0.5, want: 0.125},
		{name: "tied quantiles take the middle", raw: 1, want: 0.5},
		{name: "after the tie", raw: 2.5, want: 0.875},
		{name: "top quantile", raw: 4, want: 1},
		{name: "above all", raw: 9, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.Calibrate(tt.raw); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Calibrate(%v): got %v, want %v", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseModel(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr string
	}{
		{name: "unknown field", json: `{"features":[],"weights":[],"quantiles":[],"bias":1}`, wantErr: `unknown field "bias"`},
		{name: "wrong feature set", json: `{"features":["x"],"weights":[1],"quantiles":[0,1]}`, wantErr: "model has 1 features"},
		{name: "descending quantiles", json: `{"features":["log_chars"],"weights":[1],"quantiles":[1,0]}`, wantErr: "quantile 1 (0) is below quantile 0 (1)"},
		{name: "not json", json: `weights`, wantErr: "complexity: model:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseModel([]byte(tt.json))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := DefaultModel(); err != nil {
		t.Errorf("DefaultModel: got error %v, want none", err)
	}
}

// TestScoreUsesConfiguredModel checks that Config.Model replaces the
// built-in model: a model weighing only question marks ranks by them.
func TestScoreUsesConfiguredModel(t *testing.T) {
	c := newClassifier(t, Config{Model: testModel(map[int]float64{fQuestions: 1}, 0, math.Log1p(4))})
	tests := []struct {
		name string
		text string
		want float64
	}{
		{name: "none", text: "Tell me a story about spring and summer.", want: 0},
		{name: "four", text: "Why? How? When? Where?", want: 1},
		{name: "one", text: "Why?", want: math.Log1p(1) / math.Log1p(4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Score(user(tt.text)); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Score(%q): got %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func FuzzScore(f *testing.F) {
	for _, seed := range []string{"", "hi", "```go\nfunc main() {}\n```", "请一步一步证明。", "¿Cuántos?", "\xc3", "\xff\xfe1.2.3,4", strings.Repeat("?", 100)} {
		f.Add(seed, "assistant text", 2)
	}
	c := newClassifier(f, Config{MaxScanBytes: 256})
	f.Fuzz(func(t *testing.T, task, prior string, tools int) {
		r := &Request{Tools: tools, Messages: []Message{{Role: "assistant", Text: prior}, {Role: "user", Text: task}}}
		s := c.Score(r)
		if math.IsNaN(s) || s < 0 || s > 1 {
			t.Fatalf("Score: got %v, want a number in [0, 1]", s)
		}
		if again := c.Score(r); again != s {
			t.Fatalf("Score: got %v then %v for the same request", s, again)
		}
	})
}
