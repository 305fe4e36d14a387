package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/providersim"
	"github.com/switchyard/switchyard/stack"
)

// The real providers' hosts, as configs/examples/real-providers names them.
var realHosts = map[string]string{
	"openai":    "https://api.openai.com",
	"anthropic": "https://api.anthropic.com",
	"gemini":    "https://generativelanguage.googleapis.com",
}

// realKeys are the provider keys the real-providers stack's ext_proc gets
// from its environment, as an operator would export them.
var realKeys = map[string]struct{ env, key string }{
	"openai":    {"OPENAI_API_KEY", "sk-e2e-openai-real"},
	"anthropic": {"ANTHROPIC_API_KEY", "sk-ant-e2e-real"},
	"gemini":    {"GEMINI_API_KEY", "gem-e2e-key-real"},
}

const realTenantKey = "sk-local-demo-real"

// realProvidersOptions runs configs/examples/real-providers the way `make
// run CONFIG=configs/examples/real-providers` does (SimulatePolicy: no
// simulator is started), with its providers' hosts moved to the test's
// own HTTPS upstreams, a CA of the test's own that Envoy is told to trust,
// a tenant key of the test's, and the given environment.
func realProvidersOptions(t *testing.T, upstream map[string]string, env []string, caFile string) stack.Options {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "configs", "examples", "real-providers")
	providers, err := os.ReadFile(filepath.Join(dir, "providers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(providers)
	for name, real := range realHosts {
		if !strings.Contains(doc, "base_url: "+real+"\n") {
			t.Fatalf("providers.yaml no longer names %s at %s", name, real)
		}
		doc = strings.Replace(doc, "base_url: "+real+"\n", "base_url: "+upstream[name]+"\n", 1)
	}
	tenants, err := os.ReadFile(filepath.Join(dir, "tenants.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(realTenantKey))
	const placeholder = "8344ba305f5960e08ac7d05fea01b29641b05eab902ba5e23b35b37bd53effec"
	if !strings.Contains(string(tenants), placeholder) {
		t.Fatal("tenants.yaml no longer holds the placeholder key hash")
	}
	return stack.Options{
		Policy:     dir,
		Simulate:   stack.SimulatePolicy,
		CACertFile: caFile,
		Env:        env,
		Overlay: map[string]string{
			"providers.yaml": doc,
			"tenants.yaml":   strings.Replace(string(tenants), placeholder, hex.EncodeToString(sum[:]), 1),
		},
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	r, err := stack.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRealProviders runs the real-providers policy against HTTPS upstreams
// that speak each provider's wire format and insist on its key: Envoy
// checks their certificates against the test's CA and sends each its host
// name (SNI); ext_proc adds the key from its environment and translates.
func TestRealProviders(t *testing.T) {
	ca := testCA(t)
	var cfg providersim.Config
	for name := range realHosts {
		cfg.Providers = append(cfg.Providers, providersim.ProviderConfig{
			Name: name, Kind: providersim.Kind(name), ExpectKey: realKeys[name].key, TLS: ca.serverTLS,
		})
	}
	up, err := providersim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Close() })
	upstream, env := map[string]string{}, []string{}
	for name := range realHosts {
		_, port, _ := net.SplitHostPort(up.Addr(name))
		upstream[name] = "https://localhost:" + port // a name, as real providers have, so SNI is sent
		env = append(env, realKeys[name].env+"="+realKeys[name].key)
	}
	s := startStack(t, realProvidersOptions(t, upstream, env, ca.file))
	if s.Sim != nil {
		t.Fatalf("the stack started simulators (%v) for a policy that marks none simulated", s.Sim.Names())
	}

	c := client(s, realTenantKey)
	tests := []struct {
		model, provider, path, keyHeader, keyValue, upstreamModel string
	}{
		{"gpt-4o-mini", "openai", "/v1/chat/completions", "Authorization", "Bearer " + realKeys["openai"].key, `"model":"gpt-4o-mini"`},
		{"claude-3-5-haiku", "anthropic", "/v1/messages", "X-Api-Key", realKeys["anthropic"].key, `"model":"claude-3-5-haiku-20241022"`},
		{"gemini-2.0-flash", "gemini", "/v1beta/models/gemini-2.0-flash:generateContent", "X-Goog-Api-Key", realKeys["gemini"].key, `"contents"`},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			var resp *http.Response
			got, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model:    tc.model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
			}, option.WithResponseInto(&resp))
			if err != nil {
				t.Fatalf("chat completion: %v", err)
			}
			if got.Object != "chat.completion" || got.Model != tc.model || len(got.Choices) != 1 ||
				!strings.HasPrefix(got.Choices[0].Message.Content, "Hello from ") || got.Usage.TotalTokens == 0 {
				t.Errorf("answer = %+v; want the upstream's reply in OpenAI form", got)
			}
			if p := resp.Header.Get("x-switchyard-provider"); p != tc.provider {
				t.Errorf("x-switchyard-provider = %q, want %q", p, tc.provider)
			}
			st, err := up.Stats(tc.provider)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Recent) == 0 {
				t.Fatal("the upstream recorded no request")
			}
			r := st.Recent[len(st.Recent)-1]
			if r.SNI != "localhost" {
				t.Errorf("SNI = %q, want the base_url's host, localhost", r.SNI)
			}
			if r.Path != tc.path {
				t.Errorf("path = %q, want %q (translated for %s)", r.Path, tc.path, tc.provider)
			}
			if v := r.Header.Get(tc.keyHeader); v != tc.keyValue {
				t.Errorf("%s carried %q, want the key from %s", tc.keyHeader, v, realKeys[tc.provider].env)
			}
			if strings.Contains(r.Header.Get("Authorization")+r.Body, realTenantKey) {
				t.Error("the tenant's key reached the provider")
			}
			if !strings.Contains(r.Body, tc.upstreamModel) {
				t.Errorf("body %s lacks %s", truncate(r.Body, 300), tc.upstreamModel)
			}
		})
	}

	t.Run("streamed through anthropic", func(t *testing.T) {
		stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model:    "claude-3-5-haiku",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
		})
		var text strings.Builder
		for stream.Next() {
			if ch := stream.Current(); len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(text.String(), "Hello from ") {
			t.Errorf("streamed text %q, want the upstream's reply", text.String())
		}
	})
}

// TestRealProvidersRefuseUnsetKey: a real provider whose key variable is
// unset stops the gateway at start-up with a message naming the variable,
// instead of serving 401s.
func TestRealProvidersRefuseUnsetKey(t *testing.T) {
	upstream := map[string]string{}
	for name := range realHosts {
		upstream[name] = "https://localhost:9" // never reached
	}
	env := []string{"OPENAI_API_KEY=" + realKeys["openai"].key, "ANTHROPIC_API_KEY=" + realKeys["anthropic"].key, "GEMINI_API_KEY="}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := stack.Start(ctx, realProvidersOptions(t, upstream, env, testCA(t).file))
	if err == nil {
		s.Close()
		t.Fatal("the gateway started with GEMINI_API_KEY unset")
	}
	if !strings.Contains(err.Error(), "environment variable GEMINI_API_KEY is unset or empty") {
		t.Errorf("start-up error does not name the variable:\n%v", err)
	}
}

type testAuthority struct {
	file      string // the CA certificate, PEM, for Envoy
	serverTLS *tls.Config
}

// testCA makes a CA and a certificate it signs for localhost, valid for
// the test only.
func testCA(t *testing.T) testAuthority {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "switchyard e2e CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	return testAuthority{file: file, serverTLS: &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   []string{"h2", "http/1.1"},
	}}
}
