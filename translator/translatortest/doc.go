// Package translatortest holds the test machinery the translator packages
// (translator/openai, anthropic, gemini) share, as net/http/httptest
// does for handlers: golden cases and the -update flag that rewrites them,
// the replay of every stream case cut at every byte offset, and the
// invariants their fuzz tests assert of any translator.
//
// A translator package keeps its cases under testdata/<dir>/, each an input
// <case>.in.<ext> beside the expected output <case>.golden.<ext>; what the
// input and the golden file hold is the package's own business.
//
// Importing the package defines the -update flag, so a test binary that
// imports it must not define one of its own.
package translatortest
