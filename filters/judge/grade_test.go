package judge

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

func TestParseRating(t *testing.T) {
	tests := []struct {
		reply string
		score float64
		ok    bool
	}{
		{"Rating: 10", 1, true},
		{"Rating: 1", 0, true},
		{"rating=4", 1.0 / 3, true},
		{"Rating: **7**", 6.0 / 9, true},
		{"The candidate is close. Rating: 3\nOn reflection, Rating: 5", 4.0 / 9, true},
		{"Rating: 0", 0, false},
		{"Rating: 11", 0, false},
		{"Rating: 100", 0, false},
		{"I would give it 8 out of 10", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		score, ok := parseRating(tt.reply)
		if ok != tt.ok || (ok && !near(score, tt.score)) {
			t.Errorf("parseRating(%q) = %v, %v; want %v, %v", tt.reply, score, ok, tt.score, tt.ok)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func FuzzParseRating(f *testing.F) {
	for _, s := range []string{"Rating: 7", "rating = 10", "Rating: 99", strings.Repeat("Rating: 2 ", 1000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		score, ok := parseRating(reply)
		if ok && !(score >= 0 && score <= 1) {
			t.Fatalf("score %v out of [0, 1]", score)
		}
	})
}

// TestGradingMessages: what the judge reads is bounded whatever the
// conversation, keeps the turn answered, and stays valid UTF-8.
func TestGradingMessages(t *testing.T) {
	text := func(role, s string) openaiapi.Message {
		return openaiapi.Message{Role: role, Content: openaiapi.Content{Text: s, Set: true}}
	}
	long := strings.Repeat("é", maxTranscript)
	conv := []openaiapi.Message{text("system", "be brief"), text("user", long), text("assistant", "ok"), text("user", "and what of the last question?")}
	msgs := gradingMessages(conv, strings.Repeat("ü", maxAnswer), "the candidate")
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		t.Fatalf("messages %+v", msgs)
	}
	user := msgs[1].Content.Text
	if !utf8.ValidString(user) {
		t.Error("the grading prompt is not valid UTF-8")
	}
	if n := len(user); n > maxTranscript+2*maxAnswer+200 {
		t.Errorf("the grading prompt is %d bytes, past its bounds", n)
	}
	for _, want := range []string{"[earlier turns omitted]", "user: and what of the last question?", "[cut]", "<candidate>\nthe candidate\n</candidate>"} {
		if !strings.Contains(user, want) {
			t.Errorf("the grading prompt lacks %q", want)
		}
	}
	if strings.Contains(user, "be brief") {
		t.Error("the grading prompt kept the start of a conversation past its bound")
	}
}
