package policy

import (
	"slices"
	"testing"
)

// TestUnchanged: the files a policy was compiled from are unchanged
// against its version, so a poll of an untouched directory applies
// nothing; any change to them is a change.
func TestUnchanged(t *testing.T) {
	files, err := ReadDir("../local")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(files)
	if err != nil {
		t.Fatal(err)
	}
	edited := slices.Clone(files)
	edited[0].Data = append(slices.Clone(edited[0].Data), "\n# edited\n"...)
	tests := []struct {
		name  string
		files []File
		want  bool
	}{
		{name: "the files compiled", files: files, want: true},
		{name: "a file edited", files: edited, want: false},
		{name: "a file added", files: append(slices.Clone(files), File{Name: "zz.yaml", Data: []byte("{}\n")}), want: false},
		{name: "a file removed", files: files[1:], want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unchanged(tt.files, p.Version); got != tt.want {
				t.Errorf("unchanged = %v, want %v", got, tt.want)
			}
		})
	}
}
