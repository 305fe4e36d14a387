package channel

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// serve runs a gRPC server with the health service on s until the test ends.
func serve(t *testing.T, s Server) net.Addr {
	t.Helper()
	l, opts, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(g, health.NewServer())
	go func() { _ = g.Serve(l) }()
	t.Cleanup(g.Stop)
	return l.Addr()
}

func check(target string, creds credentials.TransportCredentials) error {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

func TestUnixSocketIsOwnerOnly(t *testing.T) {
	// A loose umask must not widen the socket.
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "run", "extproc.sock")
	serve(t, Server{Listen: "unix:" + path})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode = %v, want a socket with 0600", fi.Mode())
	}
	if err := check("unix:"+path, insecure.NewCredentials()); err != nil {
		t.Fatalf("the owner cannot call over the socket: %v", err)
	}
	// A second server replaces a stale socket but never another file.
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (&Server{Listen: "unix:" + filepath.Join(dir, "file")}).Open(); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("listening over a regular file: err = %v", err)
	}
	if _, _, err := (&Server{Listen: "unix:/" + strings.Repeat("d", 120)}).Open(); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("a path too long for a socket: err = %v", err)
	}
}

func TestRefusedSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Server
		want string
	}{
		{"plain TCP beyond loopback", Server{Listen: "0.0.0.0:0"}, "plain TCP beyond loopback"},
		{"a certificate without a client CA", Server{Listen: "127.0.0.1:0", CertFile: "c", KeyFile: "k"}, "together"},
		{"TLS on a socket", Server{Listen: "unix:/tmp/x.sock", CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}, "Unix socket"},
		{"unreadable certificate", Server{Listen: "127.0.0.1:0", CertFile: "/nonexistent", KeyFile: "k", ClientCAFile: "ca"}, "server certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _, err := tc.s.Open()
			if err == nil {
				l.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	l, _, err := (&Server{Listen: "0.0.0.0:0", PlainTCP: true}).Open()
	if err != nil {
		t.Fatalf("xds's plain TCP: %v", err)
	}
	l.Close()
}

func TestMutualTLSRefusesClientsWithoutCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "switchyard test CA")
	other := newCA(t, "someone else's CA")
	ca.issue(t, dir, "server", true)
	ca.issue(t, dir, "envoy", false)
	other.issue(t, dir, "stranger", false)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.cert.Raw)

	addr := serve(t, Server{Listen: "127.0.0.1:0", CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server.key"), ClientCAFile: filepath.Join(dir, "ca.pem")})
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	client := func(name string) credentials.TransportCredentials {
		cfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		if name != "" {
			pair, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key"))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		return credentials.NewTLS(cfg)
	}
	target := addr.String()
	if err := check(target, client("envoy")); err != nil {
		t.Fatalf("a client with a certificate of the CA is refused: %v", err)
	}
	if err := check(target, client("")); err == nil {
		t.Error("a client without a certificate got an answer")
	}
	if err := check(target, client("stranger")); err == nil {
		t.Error("a client with another CA's certificate got an answer")
	}
	if err := check(target, insecure.NewCredentials()); err == nil {
		t.Error("a plaintext client got an answer")
	}
}

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

// issue writes dir/name.pem and dir/name.key, a server's (for 127.0.0.1)
// or a client's certificate.
func (ca *testCA) issue(t *testing.T, dir, name string, server bool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(dir, name+".pem"), "CERTIFICATE", der)
	writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", kb)
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
