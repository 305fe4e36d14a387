package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/ledger"
)

// stack is bin/devstack serving configs/local on free ports, beside any
// make run: its gateway, its access log (Envoy's) and its ledger (SQLite
// in its directory).
type stack struct {
	cmd    *exec.Cmd
	url    string // http://127.0.0.1:port
	dir    string
	policy *policy.Policy // the copy it serves
	ledger *ledger.DB
	done   chan struct{}
}

var servingLine = regexp.MustCompile(`serving the OpenAI API at (http://\S+)/v1`)

// startStack runs devstack with its output in dir/devstack.log and waits
// for the line that says where it serves.
func startStack(ctx context.Context, devstack, config, dir string) (*stack, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "devstack.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(devstack, "-config", config, "-port", "0", "-dir", dir, "-quiet")
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &stack{cmd: cmd, dir: dir, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(io.TeeReader(out, logf))
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	select {
	case s.url = <-found:
	case <-s.done:
		return nil, fmt.Errorf("devstack exited while starting; see %s", logf.Name())
	case <-time.After(2 * time.Minute):
		s.close()
		return nil, fmt.Errorf("devstack did not start within 2 minutes; see %s", logf.Name())
	case <-ctx.Done():
		s.close()
		return nil, ctx.Err()
	}
	if s.policy, err = policy.Load(filepath.Join(dir, "policy")); err == nil {
		s.ledger, err = ledger.OpenSQLite(ctx, filepath.Join(dir, "usage.db"), 0)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// close stops devstack as Ctrl-C would, which stops everything it started.
func (s *stack) close() {
	if s.ledger != nil {
		s.ledger.Close()
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
}

// accessLine is one request as Envoy's access log has it.
type accessLine struct {
	RequestID  string `json:"request_id"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Status     int    `json:"status"`
	Details    string `json:"details"`
	Switchyard struct {
		Route string `json:"route"`
	} `json:"switchyard"`
}

func (s *stack) accessLogPath() string { return filepath.Join(s.dir, "envoy-0.log") }

// logSize is where the access log's next line will start.
func (s *stack) logSize() int64 {
	fi, err := os.Stat(s.accessLogPath())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// accessSince is every access log line written from offset on. Envoy's
// log shares its file with Envoy's own messages, which are not JSON.
func (s *stack) accessSince(offset int64) ([]accessLine, error) {
	f, err := os.Open(s.accessLogPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	var lines []accessLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l accessLine
		if b := sc.Bytes(); bytes.HasPrefix(b, []byte("{")) && json.Unmarshal(b, &l) == nil && l.RequestID != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

// rowsSince is every ledger row of a request that started at or after from.
func (s *stack) rowsSince(ctx context.Context, from time.Time) (map[string]ledger.Record, error) {
	rows := map[string]ledger.Record{}
	for r, err := range s.ledger.Records(ctx, ledger.Filter{From: from}) {
		if err != nil {
			return nil, err
		}
		rows[r.RequestID] = r
	}
	return rows, nil
}

// traffic is what a client sent through the gateway since a mark: its
// requests as the access log has them, and the ledger's rows of those
// and of any other request that started at or after from. Envoy writes
// its access log in batches, seconds apart, so traffic sends a request of
// its own, unauthenticated (a 401 of the models route, no ledger row),
// and waits for its line: every request the client made, answered
// before, is logged by then. The ledger is written a fraction of a second
// after each answer; traffic waits for a row of every request of a route
// that reaches a model.
func (s *stack) traffic(ctx context.Context, offset int64, from time.Time, n int) ([]accessLine, map[string]ledger.Record, error) {
	mark := fmt.Sprintf("/v1/models/clients-mark-%d", n)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+mark, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		select {
		case <-s.done:
			return nil, nil, fmt.Errorf("devstack has exited (see %s)", filepath.Join(s.dir, "devstack.log"))
		default:
			return nil, nil, fmt.Errorf("the gateway does not answer: %w", err)
		}
	}
	resp.Body.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		lines, err := s.accessSince(offset)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		if i := slices.IndexFunc(lines, func(l accessLine) bool { return l.Path == mark }); i >= 0 {
			lines = lines[:i]
			rows, err := s.rowsSince(ctx, from)
			if err != nil {
				return nil, nil, err
			}
			if s.everyRowWritten(lines, rows) || time.Now().After(deadline) {
				return lines, rows, nil
			}
		} else if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("the access log has no line for %s after 30s", mark)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// everyRowWritten reports whether every request of a route that reaches a
// model has its ledger row.
func (s *stack) everyRowWritten(lines []accessLine, rows map[string]ledger.Record) bool {
	for _, l := range lines {
		if _, ok := rows[l.RequestID]; !ok && s.metered(l.Switchyard.Route) {
			return false
		}
	}
	return true
}

// metered reports whether the route of that name reaches a model: each of
// its requests is a ledger row, served or refused.
func (s *stack) metered(route string) bool {
	for _, r := range s.policy.Routes {
		if r.Name == route {
			return r.API.Models()
		}
	}
	return false
}
