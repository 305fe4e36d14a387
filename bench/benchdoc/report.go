// Package benchdoc writes benchmark results into docs/BENCHMARKS.md. Each
// benchmark owns one section between its own markers, so several programs
// share the file without clobbering each other.
package benchdoc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Markers returns the begin and end markers of a named section.
func Markers(name string) (begin, end string) {
	return "<!-- " + name + ":begin -->", "<!-- " + name + ":end -->"
}

// WriteSection replaces the text between the markers of section name in
// path with body, leaving the rest of the file alone. A missing file is
// created with a title; a file without the markers gets the section
// appended.
func WriteSection(path, name, body string) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		old = []byte("# Benchmarks\n")
	} else if err != nil {
		return err
	}
	updated, err := ReplaceSection(old, name, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, updated, 0o644)
}

// ReplaceSection returns doc with section name's body replaced.
func ReplaceSection(doc []byte, name, body string) ([]byte, error) {
	beginMarker, endMarker := Markers(name)
	block := beginMarker + "\n" + strings.TrimRight(body, "\n") + "\n" + endMarker
	begin := bytes.Index(doc, []byte(beginMarker))
	end := bytes.Index(doc, []byte(endMarker))
	switch {
	case begin < 0 && end < 0:
		out := bytes.TrimRight(doc, "\n")
		return append(out, []byte("\n\n"+block+"\n")...), nil
	case begin < 0 || end < begin:
		return nil, errors.New(name + " markers are missing or out of order")
	}
	var out bytes.Buffer
	out.Write(doc[:begin])
	out.WriteString(block)
	out.Write(doc[end+len(endMarker):])
	return out.Bytes(), nil
}

// Machine describes the host: OS, `uname -m`, core count and CPU model.
func Machine() string {
	arch := runtime.GOARCH
	if out, err := exec.Command("uname", "-m").Output(); err == nil {
		arch = strings.TrimSpace(string(out))
	}
	desc := fmt.Sprintf("%s %s, %d cores", runtime.GOOS, arch, runtime.NumCPU())
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				desc += ", " + strings.TrimSpace(v)
				break
			}
		}
	}
	return desc
}
