package extprocapp

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/state/health"
)

// TestClassify: an active check's failure names the layer that failed,
// and never the URL (which may carry a key in its query).
func TestClassify(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plain.Close()
	plainPort := plain.Listener.Addr().(*net.TCPAddr).Port
	untrusted := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer untrusted.Close()
	untrustedPort := untrusted.Listener.Addr().(*net.TCPAddr).Port
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	get := func(u string) error {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	tests := []struct {
		name     string
		provider policy.Provider
		err      error
		want     health.Outcome
		wantWhy  string
	}{
		{
			name:     "a name that does not resolve",
			provider: policy.Provider{Host: "api.example.invalid", Port: 443},
			err: &url.Error{Op: "Get", URL: "https://api.example.invalid/v1/models?key=sk-secret", Err: &net.OpError{Op: "dial", Net: "tcp",
				Err: &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}}},
			want: health.NoAddress, wantWhy: "DNS: api.example.invalid did not resolve: no such host",
		},
		{
			name:     "a port that refuses",
			provider: policy.Provider{Host: "127.0.0.1", Port: closedPort},
			err:      get("http://127.0.0.1:" + strconv.Itoa(closedPort) + "/?key=sk-secret"),
			want:     health.ConnectFailure, wantWhy: "connect: 127.0.0.1:" + strconv.Itoa(closedPort) + ": connection refused",
		},
		{
			name:     "a certificate nobody trusts",
			provider: policy.Provider{Host: "127.0.0.1", Port: untrustedPort},
			err:      get("https://127.0.0.1:" + strconv.Itoa(untrustedPort) + "/?key=sk-secret"),
			want:     health.ConnectFailure, wantWhy: "TLS: handshake with 127.0.0.1:" + strconv.Itoa(untrustedPort) + " failed: tls: failed to verify certificate",
		},
		{
			name:     "TLS to a server that speaks none",
			provider: policy.Provider{Host: "127.0.0.1", Port: plainPort},
			err:      get("https://127.0.0.1:" + strconv.Itoa(plainPort) + "/?key=sk-secret"),
			want:     health.ConnectFailure, wantWhy: "TLS: handshake with 127.0.0.1:" + strconv.Itoa(plainPort) + " failed: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.err == nil {
				t.Fatal("the request did not fail")
			}
			got, why := classify(context.Background(), &tt.provider, tt.err)
			if got != tt.want || !strings.HasPrefix(why, tt.wantWhy) {
				t.Errorf("classify = %v %q, want %v %q...", got, why, tt.want, tt.wantWhy)
			}
			if strings.Contains(why, "sk-secret") || strings.Contains(why, "://") {
				t.Errorf("%q holds the URL", why)
			}
		})
	}
}
