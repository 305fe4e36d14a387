package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestMarkdown(t *testing.T) {
	rep := report{
		when: time.Date(2026, 12, 5, 4, 30, 0, 0, time.UTC), machine: "vm (linux/amd64, 2 CPUs)", runtimes: "Node 22.23.5, Python 3.11.7", commit: "abc1234",
		results: []result{
			{client: "Claude Code", version: "2.1.332", api: "messages", target: "anthropic / claude-3-5-haiku", requests: 2, rows: 2},
			{client: "Codex CLI", version: "0.171.0", api: "responses", target: "default model (gpt-6.2-sol)", err: "exit status 1: a | b", requests: 1, rows: 1},
		},
	}
	want := beginMarker + `

Run 2026-12-05 04:30 UTC on vm (linux/amd64, 2 CPUs) with Node 22.23.5, Python 3.11.7, gateway at commit abc1234: **1 of 2 passed**.

| client | version | API | provider kind / model | result | requests | ledger rows |
|---|---|---|---|---|---|---|
| Claude Code | 2.1.332 | messages | anthropic / claude-3-5-haiku | pass | 2 | 2 |
| Codex CLI | 0.171.0 | responses | default model (gpt-6.2-sol) | **fail**: exit status 1: a \| b | 1 | 1 |

` + endMarker + "\n"
	if diff := cmp.Diff(want, rep.markdown()); diff != "" {
		t.Errorf("markdown mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteSection(t *testing.T) {
	section := beginMarker + "\nnew\n" + endMarker + "\n"
	tests := []struct {
		name, old, want, wantErr string
	}{
		{name: "replaces the section, keeps the rest", old: "# Clients\n\nIntro.\n\n" + beginMarker + "\nold\n" + endMarker + "\n\n## Notes\n",
			want: "# Clients\n\nIntro.\n\n" + section + "\n## Notes\n"},
		{name: "appends to a file without one", old: "# Clients\nIntro.\n", want: "# Clients\nIntro.\n\n" + section},
		{name: "writes a new file", want: section},
		{name: "refuses a half section", old: "# Clients\n" + beginMarker + "\nold\n", wantErr: "one of the markers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "CLIENTS.md")
			if tt.old != "" {
				if err := os.WriteFile(path, []byte(tt.old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := writeSection(path, section)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("file mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
