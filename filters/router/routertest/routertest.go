// Package routertest builds the large policy the router's decision time
// is measured on, shared by the router's Go benchmark and `make bench`.
package routertest

import (
	"fmt"
	"strings"

	"github.com/switchyard/switchyard/configs/policy"
)

// Policy compiles a policy of `models` models over 5 providers and a chat
// route with `rules` routing rules of four kinds (topic, token count,
// header, complexity with vision), none of which matches Prompt, so a
// decision evaluates them all before the strategy ranks every model.
func Policy(models, rules int) (*policy.Policy, error) {
	var sb strings.Builder
	sb.WriteString("providers:\n")
	for i := range 5 {
		fmt.Fprintf(&sb, "  - {name: p%d, kind: openai, base_url: \"http://127.0.0.1:%d\"}\n", i, 9000+i)
	}
	sb.WriteString("models:\n")
	for i := range models {
		fmt.Fprintf(&sb, "  - {name: m%d, provider: p%d, context_window: 128000, max_output_tokens: 4096, capabilities: [chat, tools, stream], quality: %.2f, price_usd_per_mtok: {input: %d, output: %d}}\n", i, i%5, float64(i%10)/10, i+1, 2*i+1)
	}
	sb.WriteString("routes:\n  - name: chat\n    path: /v1/chat/completions\n    api: chat_completions\n    routing:\n      fallback: [m1, m2]\n      rules:\n")
	for i := range rules {
		m := i % models
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "        - {name: r%d, when: {topic: [kw%d, other%d]}, route_to: [m%d]}\n", i, i, i, m)
		case 1:
			fmt.Fprintf(&sb, "        - {name: r%d, when: {token_count_above: %d}, route_to: [m%d]}\n", i, 100000+i, m)
		case 2:
			fmt.Fprintf(&sb, "        - {name: r%d, when: {header: {x-h%d: v}}, route_to: [m%d]}\n", i, i, m)
		default:
			fmt.Fprintf(&sb, "        - {name: r%d, when: {complexity: [complex], requires_vision: true}, route_to: [m%d]}\n", i, m)
		}
	}
	return policy.Compile([]policy.File{{Name: "routertest.yaml", Data: []byte(sb.String())}})
}

// Prompt is a typical request the decision is measured on.
const Prompt = "Summarise the attached meeting notes in three bullet points and list the owners of each action item."
