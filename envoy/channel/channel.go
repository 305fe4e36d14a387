// Package channel is how Envoy reaches the gateway's gRPC servers (ext_proc
// and xds): a Unix socket only its owner may open when both run on one host,
// or TCP with mutual TLS when they do not. ext_proc hands provider keys to
// whoever claims an attempt's stream, so the channel is its only guard.
package channel

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// maxSocketPath is the longest path a Unix socket may have on Linux
// (sockaddr_un.sun_path less its NUL).
const maxSocketPath = 107

// Server is where a gRPC server listens and how its clients prove who
// they are.
type Server struct {
	// Listen is "unix:/path" or host:port.
	Listen string
	// CertFile and KeyFile are the server's certificate; ClientCAFile the
	// CA a client's certificate must chain to. All three or none.
	CertFile, KeyFile, ClientCAFile string
	// PlainTCP lets a TCP listener without mutual TLS bind beyond
	// loopback. Only xds, which serves no secret, offers it.
	PlainTCP bool
}

// Register adds the -listen and -tls-* flags for s to fs.
func (s *Server) Register(fs *flag.FlagSet, defaultListen, peer string) {
	fs.StringVar(&s.Listen, "listen", defaultListen, "gRPC address "+peer+" calls: unix:/path (mode 0600, the default on one host) or host:port (with -tls-* across hosts)")
	fs.StringVar(&s.CertFile, "tls-cert", "", "server certificate (PEM) for mutual TLS on a TCP -listen; re-read at each handshake, so it can be rotated in place")
	fs.StringVar(&s.KeyFile, "tls-key", "", "private key (PEM) of -tls-cert")
	fs.StringVar(&s.ClientCAFile, "tls-client-ca", "", "CA bundle (PEM) a client's certificate must chain to; with -tls-cert every client must present one")
}

// Unix reports the socket path of a unix: address.
func Unix(addr string) (string, bool) { return strings.CutPrefix(addr, "unix:") }

// Open listens and returns the gRPC options that authenticate clients.
// A Unix socket is created with mode 0600: only the user both processes
// run as can connect. Plain TCP is refused beyond loopback unless
// PlainTCP; mutual TLS needs all three files.
func (s *Server) Open() (net.Listener, []grpc.ServerOption, error) {
	mtls := s.CertFile != "" || s.KeyFile != "" || s.ClientCAFile != ""
	if mtls && (s.CertFile == "" || s.KeyFile == "" || s.ClientCAFile == "") {
		return nil, nil, errors.New("mutual TLS needs -tls-cert, -tls-key and -tls-client-ca together")
	}
	if path, ok := Unix(s.Listen); ok {
		if mtls {
			return nil, nil, errors.New("-tls-* apply to a TCP -listen; a Unix socket is guarded by its mode")
		}
		l, err := listenUnix(path)
		return l, nil, err
	}
	var opts []grpc.ServerOption
	if mtls {
		cfg, err := mutualTLS(s.CertFile, s.KeyFile, s.ClientCAFile)
		if err != nil {
			return nil, nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg)))
	} else if !s.PlainTCP && !loopback(s.Listen) {
		return nil, nil, fmt.Errorf("-listen %s: plain TCP beyond loopback lets anyone who reaches the port in; listen on unix:/path, or set -tls-cert, -tls-key and -tls-client-ca", s.Listen)
	}
	l, err := net.Listen("tcp", s.Listen)
	return l, opts, err
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// umask is process-wide; bind under a private one so the socket never
// exists with wider permissions, not even between bind and chmod.
var umask sync.Mutex

func listenUnix(path string) (net.Listener, error) {
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes, longer than the %d a Unix socket allows", path, len(path), maxSocketPath)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	// A socket left by a process that died is replaced; anything else at
	// the path is not ours to remove.
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	umask.Lock()
	old := syscall.Umask(0o177)
	l, err := net.Listen("unix", path)
	syscall.Umask(old)
	umask.Unlock()
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// mutualTLS requires a client certificate that chains to the CA. The files
// are read again at each handshake (Envoy's connections are long-lived, so
// handshakes are rare), so rotated certificates take effect without a
// restart; a file caught mid-rotation keeps the last good set.
func mutualTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	load := func() (*tls.Config, error) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("server certificate: %w", err)
		}
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client CA: no certificate in %s", caFile)
		}
		return &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientCAs:    pool,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"h2"},
		}, nil
	}
	first, err := load()
	if err != nil {
		return nil, err
	}
	var last atomic.Pointer[tls.Config]
	last.Store(first)
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		ClientAuth: tls.RequireAndVerifyClientCert,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			if c, err := load(); err == nil {
				last.Store(c)
			}
			return last.Load(), nil
		},
	}, nil
}
