// Package routellm loads RouteLLM's published router-evaluation files
// (MT-Bench, GSM8K, MMLU; Apache-2.0) into one shape: for each prompt, the
// text a router sees and the quality the weak and the strong model reached on
// it. Load refuses files whose SHA-256 differs from the shipped SHA256SUMS, so
// every figure computed from the data is computed from the published bytes.
package routellm
