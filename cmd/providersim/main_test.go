package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/switchyard/switchyard/providersim"
)

func TestParseFlags(t *testing.T) {
	env := map[string]string{"OA_KEY": "sk-sim"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name    string
		args    []string
		want    providersim.Config
		wantErr string
	}{
		{
			name: "providers, key and control",
			args: []string{"-provider", "oa=openai@127.0.0.1:0", "-provider", "gm=gemini@localhost:9001", "-expect-key-env", "oa=OA_KEY", "-control", "127.0.0.1:9000", "-history", "5"},
			want: providersim.Config{
				Providers: []providersim.ProviderConfig{
					{Name: "oa", Kind: providersim.KindOpenAI, Addr: "127.0.0.1:0", ExpectKey: "sk-sim"},
					{Name: "gm", Kind: providersim.KindGemini, Addr: "localhost:9001"},
				},
				ControlAddr: "127.0.0.1:9000",
				History:     5,
			},
		},
		{
			name: "control defaults to a free loopback port",
			args: []string{"-provider", "az=azure_openai@:0"},
			want: providersim.Config{Providers: []providersim.ProviderConfig{{Name: "az", Kind: providersim.KindAzureOpenAI, Addr: ":0"}}, ControlAddr: "127.0.0.1:0"},
		},
		{
			name: "scripted and recording",
			args: []string{"-provider", "an=anthropic@:0", "-provider", "gm=gemini@:0", "-script", "-record", "/tmp/rec"},
			want: providersim.Config{
				Providers: []providersim.ProviderConfig{
					{Name: "an", Kind: providersim.KindAnthropic, Addr: ":0", Script: true},
					{Name: "gm", Kind: providersim.KindGemini, Addr: ":0", Script: true},
				},
				ControlAddr: "127.0.0.1:0",
				RecordDir:   "/tmp/rec",
			},
		},
		{name: "no provider", args: nil, wantErr: "at least one -provider"},
		{name: "no kind", args: []string{"-provider", "oa@127.0.0.1:0"}, wantErr: "want name=kind@host:port"},
		{name: "no address", args: []string{"-provider", "oa=openai"}, wantErr: "want name=kind@host:port"},
		{name: "unknown kind", args: []string{"-provider", "b=bedrock@127.0.0.1:0"}, wantErr: `unknown kind "bedrock"`},
		{name: "key for an undeclared provider", args: []string{"-provider", "oa=openai@:0", "-expect-key-env", "x=OA_KEY"}, wantErr: "for a declared provider"},
		{name: "empty key variable", args: []string{"-provider", "oa=openai@:0", "-expect-key-env", "oa=MISSING"}, wantErr: "MISSING is empty"},
		{name: "stray argument", args: []string{"-provider", "oa=openai@:0", "extra"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseFlags(tt.args, getenv)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseProvider(f *testing.F) {
	for _, s := range []string{"oa=openai@127.0.0.1:0", "x=gemini@:1", "=openai@a", "a=@b", "a=b@", "a=anthropic@h@p", "a==openai@x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pc, err := parseProvider(s)
		if err != nil {
			return
		}
		if pc.Name == "" || pc.Addr == "" || strings.Contains(pc.Name, "=") {
			t.Fatalf("parseProvider(%q) accepted %+v", s, pc)
		}
		again, err := parseProvider(pc.Name + "=" + string(pc.Kind) + "@" + pc.Addr)
		if err != nil || !cmp.Equal(again, pc) {
			t.Fatalf("round trip of %+v gave %+v, %v", pc, again, err)
		}
	})
}

// TestRun starts the command's run loop, reads its announcements, makes a
// request and stops it the way a signal would.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, stdout := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"-provider", "oa=openai@127.0.0.1:0", "-provider", "an=anthropic@127.0.0.1:0"}, stdout, func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
		stdout.Close()
		done <- err
	}()
	lines := bufio.NewScanner(out)
	var got []map[string]string
	for range 3 {
		if !lines.Scan() {
			t.Fatalf("announcements ended early: %v", lines.Err())
		}
		var m map[string]string
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("announcement %q is not JSON: %v", lines.Text(), err)
		}
		got = append(got, m)
	}
	shape := []map[string]string{
		{"provider": "oa", "kind": "openai", "addr": got[0]["addr"]},
		{"provider": "an", "kind": "anthropic", "addr": got[1]["addr"]},
		{"control": got[2]["control"]},
	}
	if diff := cmp.Diff(shape, got); diff != "" {
		t.Errorf("announcements mismatch (-want +got):\n%s", diff)
	}
	for _, addr := range []string{got[0]["addr"], got[1]["addr"], got[2]["control"]} {
		if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
			t.Errorf("got address %q, want a bound loopback port", addr)
		}
	}
	resp, err := http.Post("http://"+got[0]["addr"]+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Hi"}]}`))
	if err != nil {
		t.Fatalf("request to the simulator: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("got status %d, want 200", resp.StatusCode)
	}
	resp, err = http.Get("http://" + got[2]["control"] + "/control/oa/stats")
	if err != nil {
		t.Fatalf("control request: %v", err)
	}
	var st providersim.Stats
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || st.Requests != 1 {
		t.Errorf("got stats %+v (%v), want 1 request", st, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run returned %v after cancellation, want nil", err)
	}
}
