package complexity

import (
	"strings"
	"testing"
)

// BenchmarkScore measures one routing decision on prompts of typical
// sizes, from a chat turn to a long document with a question.
func BenchmarkScore(b *testing.B) {
	paragraph := "The quarterly report shows revenue of $4.2M, up 12% on the previous quarter, while costs rose 7%. "
	prompts := []struct {
		name string
		req  *Request
	}{
		{name: "chat_40B", req: user("Hi! Can you suggest a name for my cat?")},
		{name: "question_300B", req: user("A store sells pencils at 3 for $1.20 and pens at $2.50 each. If Maria buys 12 pencils and 4 pens, and pays with a $20 bill, how much change does she get? Explain step by step.")},
		{name: "chinese_300B", req: user(strings.Repeat("请一步一步推导这个方程的解，并证明答案唯一。", 5))},
		{name: "code_2KB", req: user("Fix the bug in this function and explain why it fails:\n```python\n" + strings.Repeat("def f(xs):\n    return [x * 2 for x in xs if x % 3 == 0]\n", 40) + "```")},
		{name: "conversation_8KB", req: &Request{Tools: 3, Messages: []Message{
			{Role: "system", Text: "You are a financial analyst."},
			{Role: "user", Text: strings.Repeat(paragraph, 40)},
			{Role: "assistant", Text: strings.Repeat(paragraph, 20)},
			{Role: "user", Text: strings.Repeat(paragraph, 40) + " Compare the margins and derive the growth rate."},
		}}},
		{name: "document_64KB", req: user(strings.Repeat(paragraph, 650) + " Summarize.")},
	}
	c, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range prompts {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Score(p.req)
			}
		})
	}
}
