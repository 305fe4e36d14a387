package openaiapi

import "unicode/utf8"

// Token estimates follow the OpenAI cookbook's chat overhead (3 tokens per
// message, 3 to prime the reply) with a cheap text count: a token per 4
// bytes of ASCII and one per non-ASCII character (CJK text is close to a
// token per character). Images are not text: a low-detail image costs 85
// tokens, any other is counted as 765 (a 512-px-tile high-detail image).
// The estimate only gates admission (context window, budget reservation);
// bills use the provider's reported usage.
const (
	tokensPerMessage  = 3
	tokensReplyPrime  = 3
	tokensImageLow    = 85
	tokensImageHigh   = 765
	tokensPerTool     = 12
	tokensPerToolCall = 8
)

// TextTokens estimates the tokens of a string.
func TextTokens(s string) int {
	ascii, other := 0, 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		other++
		i += size
	}
	return (ascii+3)/4 + other
}

// EstimatePromptTokens estimates the prompt tokens of a chat request.
func EstimatePromptTokens(r *ChatRequest) int {
	n := tokensReplyPrime
	for i := range r.Messages {
		m := &r.Messages[i]
		n += tokensPerMessage + TextTokens(m.Content.Text)
		if m.Name != "" {
			n++
		}
		for _, p := range m.Content.Parts {
			switch p.Type {
			case "text", "refusal":
				n += TextTokens(p.Text) + TextTokens(p.Refusal)
			case "image_url":
				if p.ImageURL != nil && p.ImageURL.Detail == "low" {
					n += tokensImageLow
				} else {
					n += tokensImageHigh
				}
			case "input_audio", "file":
				// Counted by size: base64 of audio or a document.
				if p.InputAudio != nil {
					n += len(p.InputAudio.Data) / 4
				}
				if p.File != nil {
					n += len(p.File.FileData) / 4
				}
			}
		}
		for _, tc := range m.ToolCalls {
			n += tokensPerToolCall + TextTokens(tc.Function.Name) + TextTokens(tc.Function.Arguments)
		}
	}
	for _, t := range r.Tools {
		n += tokensPerTool + TextTokens(t.Function.Name) + TextTokens(t.Function.Description) + (len(t.Function.Parameters)+3)/4
	}
	return n
}

// HasImages reports whether any message carries an image part.
func (r *ChatRequest) HasImages() bool {
	for i := range r.Messages {
		for _, p := range r.Messages[i].Content.Parts {
			if p.Type == "image_url" {
				return true
			}
		}
	}
	return false
}

// WantsJSON reports whether the client asked for JSON output.
func (r *ChatRequest) WantsJSON() bool {
	return r.ResponseFormat != nil && (r.ResponseFormat.Type == "json_object" || r.ResponseFormat.Type == "json_schema")
}

// UsesTools reports whether the request defines or replays tool calls.
func (r *ChatRequest) UsesTools() bool {
	if len(r.Tools) > 0 {
		return true
	}
	for i := range r.Messages {
		if len(r.Messages[i].ToolCalls) > 0 || r.Messages[i].Role == "tool" {
			return true
		}
	}
	return false
}
