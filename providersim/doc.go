// Package providersim simulates the LLM provider APIs that Switchyard routes
// to, for end-to-end tests and local runs: OpenAI Chat Completions (also as
// Azure OpenAI deployment URLs and as a generic "OpenAI-compatible" server),
// Anthropic Messages and Google Gemini generateContent.
//
// The simulators speak the real wire formats closely enough for the official
// SDKs to parse them, answer with deterministic text, tool calls and usage
// (the rules are in README.md), enforce the validation rules a gateway must
// honour, and take injected faults ([Fault]) so tests can exercise retries,
// fallback and stream handling. In scripted mode ([ProviderConfig.Script])
// the model calls only the tools a prompt asks for, so a real agent's
// session ends by itself; [Config.RecordDir] writes every request received
// to disk as a fixture.
//
// Every simulated provider listens on its own address, so one of them can
// refuse connections while the others keep serving. A control listener
// exposes the same fault and statistics operations over HTTP for tests that
// run the simulator as a separate process (see cmd/providersim).
package providersim
