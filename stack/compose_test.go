package stack

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
)

type compose struct {
	Services map[string]struct {
		Image       string   `yaml:"image"`
		User        string   `yaml:"user"`
		Build       string   `yaml:"build"`
		Command     []string `yaml:"command"`
		Ports       []string `yaml:"ports"`
		Environment []string `yaml:"environment"`
		Volumes     []string `yaml:"volumes"`
		NetworkMode string   `yaml:"network_mode"`
		Profiles    []string `yaml:"profiles"`
	} `yaml:"services"`
}

func root(t *testing.T) string {
	t.Helper()
	r, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestComposeMatchesMakeRun checks docker-compose.yml against what `make
// run` uses: the pinned Envoy version, the bootstrap and policy paths, and
// the ports of configs/local and envoy/bootstrap.yaml.
func TestComposeMatchesMakeRun(t *testing.T) {
	r := root(t)
	data, err := os.ReadFile(filepath.Join(r, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	for _, name := range []string{"envoy", "xds", "extproc", "providersim", "redis", "prometheus", "grafana"} {
		if _, ok := c.Services[name]; !ok {
			t.Errorf("service %q missing", name)
		}
	}
	envoy := c.Services["envoy"]
	if want := "envoyproxy/envoy:v" + EnvoyVersion; envoy.Image != want {
		t.Errorf("envoy image = %q, want %q (the pinned version)", envoy.Image, want)
	}
	mk, err := os.ReadFile(filepath.Join(r, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mk), "ENVOY_VERSION := "+EnvoyVersion) {
		t.Errorf("Makefile does not pin envoy %s", EnvoyVersion)
	}
	if !contains(envoy.Volumes, "./envoy/bootstrap.yaml:/etc/envoy/bootstrap.yaml:ro") {
		t.Errorf("envoy does not mount envoy/bootstrap.yaml: %v", envoy.Volumes)
	}
	p, err := policy.Load(filepath.Join(r, "configs", "local"))
	if err != nil {
		t.Fatalf("configs/local: %v", err)
	}
	published := strconv.Itoa(p.Gateway.ListenPort) + ":" + strconv.Itoa(LocalPorts.Gateway)
	if p.Gateway.ListenPort != LocalPorts.Gateway || !contains(envoy.Ports, published) {
		t.Errorf("gateway port: policy %d, make run %d, compose %v", p.Gateway.ListenPort, LocalPorts.Gateway, envoy.Ports)
	}
	if !contains(envoy.Ports, "127.0.0.1:9901:9901") || LocalPorts.EnvoyAdmin != 9901 {
		t.Errorf("envoy admin port differs: compose %v, make run %d", envoy.Ports, LocalPorts.EnvoyAdmin)
	}
	// Only the API faces the network: admin, Prometheus and Grafana are
	// published on loopback, and Grafana wants a login.
	for _, port := range envoy.Ports {
		if port != published && !strings.HasPrefix(port, "127.0.0.1:") {
			t.Errorf("port %q is published on every interface", port)
		}
	}
	for _, e := range c.Services["grafana"].Environment {
		if strings.EqualFold(e, "GF_AUTH_ANONYMOUS_ENABLED=true") {
			t.Errorf("grafana allows anonymous access: %s", e)
		}
	}
	args := func(svc string) string { return strings.Join(c.Services[svc].Command, " ") }
	if want := "--component-log-level " + contract.EnvoyComponentLogLevels; !strings.Contains(args("envoy"), want) {
		t.Errorf("envoy command %q lacks %q, which make run passes", args("envoy"), want)
	}
	for svc, want := range map[string][]string{
		"xds":     {"-config /etc/switchyard/configs/local", "-listen " + addr(LocalPorts.XDS), "-metrics " + addr(LocalPorts.XDSMetrics)},
		"extproc": {"-config /etc/switchyard/configs/local", "-metrics " + addr(LocalPorts.ExtProcMetrics)},
	} {
		for _, w := range want {
			if !strings.Contains(args(svc), w) {
				t.Errorf("%s command %q lacks %q", svc, args(svc), w)
			}
		}
		if !contains(c.Services[svc].Volumes, "./configs/local:/etc/switchyard/configs/local:ro") {
			t.Errorf("%s does not mount configs/local", svc)
		}
	}
	// make run starts a simulator at each simulated provider's base_url;
	// compose must start the same ones.
	for _, pr := range p.Providers {
		want := pr.Name + "=" + string(pr.Kind) + "@" + addr(pr.Port)
		if !pr.Simulated || pr.Host != "127.0.0.1" || !strings.Contains(args("providersim"), want) {
			t.Errorf("provider %s: policy %s:%d (simulated %v), compose %q", pr.Name, pr.Host, pr.Port, pr.Simulated, args("providersim"))
		}
	}
	// envoy/bootstrap.yaml points at the same xds and ext_proc ports.
	bs, err := os.ReadFile(filepath.Join(r, "envoy", "bootstrap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, port := range []int{LocalPorts.XDS, LocalPorts.EnvoyAdmin} {
		if !regexp.MustCompile(`port_value: ` + strconv.Itoa(port) + `\b`).Match(bs) {
			t.Errorf("envoy/bootstrap.yaml does not use port %d", port)
		}
	}
	// ext_proc listens on the Unix socket the bootstrap names, in a volume
	// Envoy mounts too, and both run as the image's user.
	pipe := regexp.MustCompile(`pipe: \{path: (\S+)\}`).FindSubmatch(bs)
	if pipe == nil {
		t.Fatal("envoy/bootstrap.yaml does not reach ext_proc over a Unix socket")
	}
	sock := string(pipe[1])
	dockerfile, err := os.ReadFile(filepath.Join(r, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	user := regexp.MustCompile(`(?m)^USER (\S+)$`).FindSubmatch(dockerfile)
	if user == nil || envoy.User != string(user[1]) {
		t.Errorf("envoy runs as %q, ext_proc as the Dockerfile's USER %q: the socket is its owner's only", envoy.User, user)
	}
	mount := func(svc string) string {
		for _, v := range c.Services[svc].Volumes {
			if name, at, _ := strings.Cut(v, ":"); at == filepath.Dir(sock) && !strings.HasPrefix(name, ".") {
				return name
			}
		}
		return ""
	}
	for _, svc := range []string{"extproc", "extproc-real"} {
		if !strings.Contains(args(svc), "-listen unix:"+sock) {
			t.Errorf("%s does not listen on the bootstrap's socket %s: %q", svc, sock, args(svc))
		}
		if m := mount(svc); m == "" || m != mount("envoy") {
			t.Errorf("%s mounts volume %q at %s, envoy %q: they must share it", svc, m, filepath.Dir(sock), mount("envoy"))
		}
	}
}

// TestComposeRealProfile: the "real" profile serves the real-providers
// example with the keys it names from the environment, and starts no
// simulator; "local" (the default of .env) keeps them.
func TestComposeRealProfile(t *testing.T) {
	r := root(t)
	data, err := os.ReadFile(filepath.Join(r, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	byProfile := map[string][]string{}
	for name, svc := range c.Services {
		if len(svc.Profiles) == 0 {
			byProfile[""] = append(byProfile[""], name)
		}
		for _, p := range svc.Profiles {
			byProfile[p] = append(byProfile[p], name)
		}
	}
	for profile, want := range map[string][]string{"local": {"extproc", "providersim", "xds"}, "real": {"extproc-real", "xds-real"}} {
		got := byProfile[profile]
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("profile %s runs %v, want %v", profile, got, want)
		}
	}
	for _, name := range byProfile[""] {
		if strings.Contains(strings.Join(c.Services[name].Command, " "), "providersim") {
			t.Errorf("service %s runs a simulator in every profile", name)
		}
	}
	env, err := os.ReadFile(filepath.Join(r, ".env"))
	if err != nil || !regexp.MustCompile(`(?m)^COMPOSE_PROFILES=local$`).Match(env) {
		t.Errorf(".env does not make local the default profile: %v %q", err, env)
	}
	p, err := policy.Load(filepath.Join(r, "configs", "examples", "real-providers"))
	if err != nil {
		t.Fatal(err)
	}
	const mount = "./configs/examples/real-providers:/etc/switchyard/configs/real-providers:ro"
	for _, svc := range []string{"xds-real", "extproc-real"} {
		s := c.Services[svc]
		if !contains(s.Volumes, mount) || !strings.Contains(strings.Join(s.Command, " "), "-config /etc/switchyard/configs/real-providers") {
			t.Errorf("%s does not serve configs/examples/real-providers: %v %v", svc, s.Command, s.Volumes)
		}
	}
	for _, pr := range p.Providers {
		if pr.Simulated {
			t.Errorf("the real-providers example marks %s simulated", pr.Name)
		}
		for _, k := range pr.Keys {
			if k.Env != "" && !contains(c.Services["extproc-real"].Environment, k.Env) {
				t.Errorf("extproc-real does not pass %s (provider %s) from the environment", k.Env, pr.Name)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestFindEnvoyExplainsHowToInstall(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("SWITCHYARD_ENVOY", "")
	_, err := FindEnvoy(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "make deps") || !strings.Contains(err.Error(), EnvoyVersion) {
		t.Fatalf("err = %v; want instructions naming make deps and %s", err, EnvoyVersion)
	}
}
