package benchdoc_test

import (
	"github.com/switchyard/switchyard/bench/benchdoc"
	"os"
	"path/filepath"
	"testing"
)

var beginMarker, endMarker = benchdoc.Markers("routing-eval")

func TestReplaceSection(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr bool
	}{
		{
			name: "replaces only between the markers",
			doc:  "# Benchmarks\n\nintro\n" + beginMarker + "\nold\n" + endMarker + "\n\n## Other\nkept\n",
			want: "# Benchmarks\n\nintro\n" + beginMarker + "\nnew\n" + endMarker + "\n\n## Other\nkept\n",
		},
		{
			name: "appends when absent",
			doc:  "# Benchmarks\n\n## Other\n",
			want: "# Benchmarks\n\n## Other\n\n" + beginMarker + "\nnew\n" + endMarker + "\n",
		},
		{name: "end before begin", doc: endMarker + "\n" + beginMarker, wantErr: true},
		{name: "begin without end", doc: beginMarker + "\nold\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := benchdoc.ReplaceSection([]byte(tt.doc), "routing-eval", "new\n")
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestWriteSectionCreatesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docs", "BENCHMARKS.md")
	if err := benchdoc.WriteSection(path, "routing-eval", "table\n"); err != nil {
		t.Fatal(err)
	}
	if err := benchdoc.WriteSection(path, "routing-eval", "table v2\n"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\n" + beginMarker + "\ntable v2\n" + endMarker + "\n"
	if string(got) != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}
