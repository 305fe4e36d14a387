package server

import (
	"testing"

	"github.com/switchyard/switchyard/configs/policy"
)

// TestUnreachable: what Envoy reports of an attempt that reached no
// provider becomes the layer that failed, in words an operator acts on.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	p := &policy.Provider{Name: "openai", Host: "api.openai.com", Port: 443}
	tests := []struct {
		name, flags, transport, want string
	}{
		{name: "no address: DNS", flags: "UH", want: "DNS: api.openai.com resolved to no address"},
		{name: "refused", flags: "UF", transport: "delayed connect error: Connection refused", want: "connect: api.openai.com:443: connection refused"},
		{name: "refused, as older Envoys word it", flags: "URX,UF", transport: "delayed_connect_error:_Connection_refused", want: "connect: api.openai.com:443: connection refused"},
		{name: "no reason given", flags: "UF", transport: "-", want: "connect: api.openai.com:443: no connection"},
		{name: "TLS", flags: "UF", transport: "TLS_error:|268435703:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER:TLS_error_end", want: "TLS: handshake with api.openai.com:443 failed: wrong version number"},
		{name: "an untrusted certificate", flags: "UF", transport: "TLS_error:|268435581:SSL_routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED:TLS_error_end", want: "TLS: handshake with api.openai.com:443 failed: certificate verify failed"},
		{name: "a reset is not unreachability", flags: "UR", want: ""},
		{name: "nor a timeout", flags: "UT", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unreachable(p, tt.flags, tt.transport); got != tt.want {
				t.Errorf("unreachable(%q, %q) = %q, want %q", tt.flags, tt.transport, got, tt.want)
			}
		})
	}
}
