package server

import (
	"net"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/configs/policy"
)

// unreachable says, naming the layer that failed, why an attempt on p got
// no response, from what Envoy reported of it: its response flags and its
// transport's failure reason (%UPSTREAM_TRANSPORT_FAILURE_REASON%). It is
// "" for a failure of another kind (a reset, a timeout), which settle
// words. A first run without a network meets exactly these three, and
// "no healthy upstream" or "connect failure" alone tells an operator
// nothing about which one.
func unreachable(p *policy.Provider, flags, transport string) string {
	transport = strings.TrimSpace(strings.ReplaceAll(transport, "_", " "))
	if transport == "-" {
		transport = ""
	}
	addr := net.JoinHostPort(p.Host, strconv.Itoa(p.Port))
	switch {
	case hasFlag(flags, []string{"UH"}):
		// A provider's cluster has neither health checks nor outlier
		// ejection: it has no host only when DNS gave it no address.
		return "DNS: " + p.Host + " resolved to no address"
	case strings.HasPrefix(transport, "TLS error"):
		return "TLS: handshake with " + addr + " failed: " + tlsReason(transport)
	case hasFlag(flags, []string{"UF"}):
		why := strings.TrimPrefix(transport, "delayed connect error: ")
		if why == "" {
			why = "no connection"
		}
		return "connect: " + addr + ": " + strings.ToLower(why)
	}
	return ""
}

// tlsReason is the reason of a BoringSSL error as Envoy words it
// ("TLS error:|268435581:SSL routines:OPENSSL internal:CERTIFICATE VERIFY
// FAILED:TLS error end"): its last part but the end marker, in lower case.
func tlsReason(transport string) string {
	parts := strings.Split(strings.TrimSuffix(transport, ":TLS error end"), ":")
	if r := strings.TrimSpace(parts[len(parts)-1]); r != "" && r != "|" {
		return strings.ToLower(r)
	}
	return "unknown reason"
}
