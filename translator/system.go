package translator

import "github.com/switchyard/switchyard/apischema/openaiapi"

// LeadingSystem counts the system and developer messages that open a
// conversation. Providers with one system prompt at the start (Anthropic's
// system, Gemini's systemInstruction) take those; a later one would change
// place if hoisted there, before turns it followed.
func LeadingSystem(msgs []openaiapi.Message) int {
	n := 0
	for n < len(msgs) && IsSystem(msgs[n].Role) {
		n++
	}
	return n
}

// IsSystem reports the roles OpenAI gives instructions with.
func IsSystem(role string) bool { return role == "system" || role == "developer" }

// SystemNote is how a system or developer message that comes after the
// conversation began reaches such a provider: as text of the user turn at
// its place, marked so that the model reads it as an instruction from the
// system, not as the user's words.
func SystemNote(text string) string {
	return "<system-message>\n" + text + "\n</system-message>"
}
