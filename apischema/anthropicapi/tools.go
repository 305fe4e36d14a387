package anthropicapi

import (
	"net/http"
	"strings"

	"github.com/switchyard/switchyard/apischema/openaiapi"
)

// toolKinds are the tools Anthropic defines, by the prefix of their
// versioned type (web_search_20250305): whether Anthropic bills each use
// apart from tokens, and, for one the gateway will not pass, why. A
// client's own tool has no type, or "custom".
var toolKinds = []struct {
	prefix  string
	perUse  bool
	refused string
}{
	{prefix: "web_search_", perUse: true},
	// The page fetched is billed as input tokens, which usage reports.
	{prefix: "web_fetch_"},
	// Run by the client; Anthropic bills only their tokens.
	{prefix: "bash_"}, {prefix: "text_editor_"}, {prefix: "computer_"}, {prefix: "memory_"},
	{prefix: "tool_search_tool_"},
	{prefix: "code_execution_", refused: "it is billed by container time, which no answer reports and this gateway's budgets cannot account for"},
}

// PricedToolUses checks the tools a Messages request offers for what they
// cost beyond tokens, and returns the most uses billed apart that the
// answer may make (the sum of each per-use tool's max_uses), which a
// budget reservation must cover. A per-use tool without max_uses, a tool
// billed in a way no answer reports, and a typed tool the gateway does
// not know (it may be a server tool with a price of its own) are refused,
// naming the tool: passing them would let an answer cost what no budget
// accounts for.
func PricedToolUses(r *MessagesRequest) (int, *openaiapi.Error) {
	uses := 0
	for i, t := range r.Tools {
		if t.Type == "" || t.Type == "custom" {
			continue
		}
		kind := -1
		for k, tk := range toolKinds {
			if strings.HasPrefix(t.Type, tk.prefix) {
				kind = k
				break
			}
		}
		switch {
		case kind < 0:
			return 0, unsupportedTool("tools.%d: tool type %q is not known to this gateway; a server tool may be billed per use, which this gateway's budgets would not account for", i, openaiapi.Clip(t.Type))
		case toolKinds[kind].refused != "":
			return 0, unsupportedTool("tools.%d: tool type %q is not served through this gateway: %s", i, t.Type, toolKinds[kind].refused)
		case !toolKinds[kind].perUse:
		case t.MaxUses == nil || *t.MaxUses < 1:
			return 0, unsupportedTool("tools.%d.max_uses: required through this gateway for %q, which is billed per use: the budget reservation must cover every use", i, t.Type)
		default:
			uses += *t.MaxUses
		}
	}
	return uses, nil
}

func unsupportedTool(format string, args ...any) *openaiapi.Error {
	return openaiapi.Errorf(http.StatusBadRequest, openaiapi.TypeInvalidRequest, "unsupported_parameter", format, args...).WithParam("tools")
}
