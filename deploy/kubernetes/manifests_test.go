package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
	"github.com/switchyard/switchyard/extproc/extprocapp"
	"github.com/switchyard/switchyard/stack"
	"github.com/switchyard/switchyard/xds/xdsapp"
)

var overlays = []string{"development", "production"}

// rendered is one overlay's objects, decoded strictly into their types.
type rendered struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	pdbs         []*policyv1.PodDisruptionBudget
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	other        int // namespaces, service accounts
}

// render builds an overlay with kustomize's Go API, after copying the
// manifests aside and making secrets.env from secrets.env.example, as the
// overlay's instructions say.
func render(t *testing.T, overlay string) *rendered {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	od := filepath.Join(dir, "overlays", overlay)
	example, err := os.ReadFile(filepath.Join(od, "secrets.env.example"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(od, "secrets.env"), example, 0o600); err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), od)
	if err != nil {
		t.Fatalf("kustomize %s: %v", overlay, err)
	}
	r := &rendered{
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
	}
	for _, res := range resMap.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		kind, name := res.GetKind(), res.GetName()
		var obj any
		switch kind {
		case "Deployment":
			obj = &appsv1.Deployment{}
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "Service":
			obj = &corev1.Service{}
		case "ConfigMap":
			obj = &corev1.ConfigMap{}
		case "Secret":
			obj = &corev1.Secret{}
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "Namespace":
			obj = &corev1.Namespace{}
		case "PodDisruptionBudget":
			obj = &policyv1.PodDisruptionBudget{}
		case "HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		default:
			t.Fatalf("%s %s: a kind this test does not decode", kind, name)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(obj); err != nil {
			t.Fatalf("%s %s does not decode strictly into %T: %v", kind, name, obj, err)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.deployments[name] = o
		case *appsv1.StatefulSet:
			r.statefulSets[name] = o
		case *corev1.Service:
			r.services[name] = o
		case *corev1.ConfigMap:
			r.configMaps[trimHash(name)] = o
		case *corev1.Secret:
			r.secrets[trimHash(name)] = o
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas = append(r.hpas, o)
		default:
			r.other++
		}
	}
	return r
}

// trimHash drops the content hash kustomize appends to generated names.
func trimHash(name string) string {
	return regexp.MustCompile(`-[a-z0-9]{10}$`).ReplaceAllString(name, "")
}

// TestManifests renders each overlay and checks what Kubernetes cannot:
// that the containers' arguments are flags the binaries define, and that
// ports, socket paths and names agree between the bootstrap, the policy,
// the containers, the probes and the Services.
func TestManifests(t *testing.T) {
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			r := render(t, overlay)
			gw, xdsDep := r.deployments["switchyard-gateway"], r.deployments["switchyard-xds"]
			if gw == nil || xdsDep == nil {
				t.Fatalf("deployments: %v", slices.Collect(maps.Keys(r.deployments)))
			}
			envoyC, epC, xdsC := container(t, gw, "envoy"), container(t, gw, "extproc"), container(t, xdsDep, "xds")

			t.Run("every container has requests and probes on its own ports", func(t *testing.T) {
				pods := map[string]corev1.PodSpec{}
				for n, d := range r.deployments {
					pods[n] = d.Spec.Template.Spec
				}
				for n, s := range r.statefulSets {
					pods[n] = s.Spec.Template.Spec
				}
				for n, spec := range pods {
					for _, c := range spec.Containers {
						if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
							t.Errorf("%s/%s: cpu and memory requests and a memory limit are required", n, c.Name)
						}
						for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
							if p == nil {
								t.Errorf("%s/%s: a readiness and a liveness probe are required", n, c.Name)
								continue
							}
							checkProbePort(t, n, c, p)
						}
					}
				}
			})

			t.Run("binaries accept the arguments", func(t *testing.T) {
				for _, c := range []corev1.Container{epC, xdsC} {
					args := expand(t, c)
					run := map[string]func(context.Context, []string, io.Writer, io.Writer) error{"extproc": extprocapp.Run, "xds": xdsapp.Run}[args[0]]
					if run == nil {
						t.Fatalf("%s runs %q, not a Switchyard binary", c.Name, args[0])
					}
					var stderr bytes.Buffer
					// -h: the flags are parsed, usage printed, nothing run.
					if err := run(context.Background(), append(args[1:], "-h"), io.Discard, &stderr); !errors.Is(err, flag.ErrHelp) {
						t.Errorf("%s %q: %v\n%s", c.Name, args, err, stderr.String())
					}
				}
			})

			t.Run("envoy validates its bootstrap with its arguments", func(t *testing.T) {
				envoy, err := stack.FindEnvoy(moduleRoot(t))
				if err != nil {
					t.Fatal(err)
				}
				bs := filepath.Join(t.TempDir(), "bootstrap.yaml")
				if err := os.WriteFile(bs, []byte(r.configMaps["switchyard-envoy"].Data["bootstrap.yaml"]), 0o644); err != nil {
					t.Fatal(err)
				}
				args := append(envoyC.Command[1:], expand(t, envoyC)...)
				if i := slices.Index(args, "--component-log-level"); i < 0 || args[i+1] != contract.EnvoyComponentLogLevels {
					t.Errorf("envoy args %q lack --component-log-level %s, which make run passes", args, contract.EnvoyComponentLogLevels)
				}
				i := slices.Index(args, "-c")
				if i < 0 || args[i+1] != mountPath(t, envoyC, "envoy")+"/bootstrap.yaml" {
					t.Fatalf("envoy args %q do not read the mounted bootstrap", args)
				}
				args[i+1] = bs
				out, err := exec.Command(envoy, append(args, "--mode", "validate")...).CombinedOutput()
				if err != nil {
					t.Fatalf("envoy --mode validate %q: %v\n%s", args, err, out)
				}
			})

			t.Run("addresses agree", func(t *testing.T) {
				bs := bootstrap(t, r.configMaps["switchyard-envoy"].Data["bootstrap.yaml"])
				// Envoy reaches the control plane through its Service.
				host, port := bs.socket(t, "xds")
				svc := r.services[host]
				if svc == nil || len(svc.Spec.Ports) != 1 || int(svc.Spec.Ports[0].Port) != port {
					t.Fatalf("bootstrap's xds at %s:%d; Services: %v", host, port, slices.Collect(maps.Keys(r.services)))
				}
				if got := namedPort(t, xdsC, svc.Spec.Ports[0].TargetPort.StrVal); got != flagPort(t, xdsC, "-listen") {
					t.Errorf("xds Service targets port %d, xds listens on %d", got, flagPort(t, xdsC, "-listen"))
				}
				if !selects(svc.Spec.Selector, xdsDep.Spec.Template.Labels) {
					t.Error("the xds Service does not select the xds pods")
				}
				// ext_proc: a Unix socket in a volume both containers mount.
				pipe := bs.pipe(t, contract.ExtProcCluster)
				if attempts := bs.pipe(t, contract.ExtProcAttemptCluster); attempts != pipe {
					t.Errorf("bootstrap reaches ext_proc's attempts at %s, its requests at %s", attempts, pipe)
				}
				if listen := flagValue(t, epC, "-listen"); listen != "unix:"+pipe {
					t.Errorf("bootstrap reaches ext_proc at %s, ext_proc listens on %s", pipe, listen)
				}
				vol := volumeAt(t, epC, filepath.Dir(pipe))
				if volumeAt(t, envoyC, filepath.Dir(pipe)) != vol || emptyDir(gw, vol) == nil {
					t.Errorf("the socket's directory %s is not one emptyDir both containers mount", filepath.Dir(pipe))
				}
				// Clients reach the policy's listener through the gateway Service.
				p := compilePolicy(t, r.configMaps["switchyard-policy"])
				gsvc := r.services["switchyard-gateway"]
				if gsvc == nil || namedPort(t, envoyC, gsvc.Spec.Ports[0].TargetPort.StrVal) != p.Gateway.ListenPort {
					t.Errorf("the gateway Service does not reach the policy's listener port %d", p.Gateway.ListenPort)
				}
				if !selects(gsvc.Spec.Selector, gw.Spec.Template.Labels) {
					t.Error("the gateway Service does not select the gateway pods")
				}
				// Probes and Prometheus reach Envoy through the stats listener.
				if namedPort(t, envoyC, "http-envoy-stats") != bs.listenerPort(t, "stats") {
					t.Errorf("envoy's http-envoy-stats port is not the bootstrap's stats listener")
				}
				if namedPort(t, epC, "http-metrics") != flagPort(t, epC, "-metrics") || namedPort(t, xdsC, "http-metrics") != flagPort(t, xdsC, "-metrics") {
					t.Error("an http-metrics port (the one Prometheus scrapes) is not the process's -metrics port")
				}
			})

			t.Run("references resolve", func(t *testing.T) {
				for n, d := range r.deployments {
					spec := d.Spec.Template.Spec
					for _, v := range spec.Volumes {
						if v.ConfigMap != nil && r.configMaps[trimHash(v.ConfigMap.Name)] == nil {
							t.Errorf("%s mounts a missing ConfigMap %s", n, v.ConfigMap.Name)
						}
					}
					for _, c := range spec.Containers {
						for _, e := range c.EnvFrom {
							if e.SecretRef != nil && r.secrets[trimHash(e.SecretRef.Name)] == nil {
								t.Errorf("%s/%s reads a missing Secret %s", n, c.Name, e.SecretRef.Name)
							}
						}
						for _, e := range c.Env {
							if ref := e.ValueFrom; ref != nil && ref.ConfigMapKeyRef != nil {
								if cm := r.configMaps[trimHash(ref.ConfigMapKeyRef.Name)]; cm == nil || cm.Data[ref.ConfigMapKeyRef.Key] == "" {
									t.Errorf("%s/%s: env %s reads a missing ConfigMap key", n, c.Name, e.Name)
								}
							}
						}
					}
				}
				// The provider keys the policy names are in the Secret ext_proc reads.
				p := compilePolicy(t, r.configMaps["switchyard-policy"])
				sec := r.secrets["switchyard-secrets"]
				for _, pr := range p.Providers {
					for _, k := range pr.Keys {
						if _, ok := sec.Data[k.Env]; k.Env != "" && !ok {
							t.Errorf("provider %s's key %s is not in Secret switchyard-secrets", pr.Name, k.Env)
						}
					}
				}
				if p.Gateway.Ledger.DSN != nil {
					if _, ok := sec.Data[p.Gateway.Ledger.DSN.Env]; !ok {
						t.Errorf("the ledger's DSN %s is not in Secret switchyard-secrets", p.Gateway.Ledger.DSN.Env)
					}
				}
				for _, pdb := range r.pdbs {
					if !matchesAny(pdb.Spec.Selector.MatchLabels, r.deployments) {
						t.Errorf("PDB %s selects no Deployment's pods", pdb.Name)
					}
				}
				for _, h := range r.hpas {
					d := r.deployments[h.Spec.ScaleTargetRef.Name]
					if d == nil || h.Spec.ScaleTargetRef.Kind != "Deployment" {
						t.Fatalf("HPA %s scales %v", h.Name, h.Spec.ScaleTargetRef)
					}
					for _, m := range h.Spec.Metrics {
						if m.ContainerResource != nil {
							container(t, d, m.ContainerResource.Container)
						}
					}
					if *h.Spec.MinReplicas > h.Spec.MaxReplicas {
						t.Errorf("HPA %s: min %d > max %d", h.Name, *h.Spec.MinReplicas, h.Spec.MaxReplicas)
					}
				}
				if len(r.pdbs) == 0 || len(r.hpas) == 0 {
					t.Error("a PodDisruptionBudget and a HorizontalPodAutoscaler are required")
				}
			})
		})
	}
}

// TestPolicyIsTheExample keeps the policy shipped in the manifests the
// real-providers example, but for its gateway.yaml.
func TestPolicyIsTheExample(t *testing.T) {
	files, err := filepath.Glob("base/policy/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, f := range files {
		if filepath.Base(f) == "gateway.yaml" {
			continue
		}
		got, _ := os.ReadFile(f)
		want, err := os.ReadFile(filepath.Join(moduleRoot(t), "configs", "examples", "real-providers", filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from configs/examples/real-providers (%v): copy it again", f, err)
		}
	}
}

// TestRulesAreTheShippedOnes: the alerting and recording rules in the
// Prometheus ConfigMap are deploy/prometheus's, which promtool checks,
// and every overlay renders them with the scrape jobs.
func TestRulesAreTheShippedOnes(t *testing.T) {
	for _, name := range []string{"alerts.yml", "recording.yml"} {
		got, _ := os.ReadFile(filepath.Join("base", "prometheus", name))
		want, err := os.ReadFile(filepath.Join(moduleRoot(t), "deploy", "prometheus", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("base/prometheus/%s differs from deploy/prometheus/%s (%v): copy it again", name, name, err)
		}
		for _, overlay := range overlays {
			cm := render(t, overlay).configMaps["switchyard-prometheus"]
			if cm == nil || cm.Data[name] != string(want) || cm.Data["scrape.yaml"] == "" {
				t.Errorf("%s: ConfigMap switchyard-prometheus lacks the scrape jobs or the shipped %s", overlay, name)
			}
		}
	}
}

// TestBootstrapIsTheLocalOne: the pod's bootstrap is envoy/bootstrap.yaml
// with the pod's addresses and the stats listener; nothing else differs.
func TestBootstrapIsTheLocalOne(t *testing.T) {
	read := func(path string) map[string]any {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		res := m["static_resources"].(map[string]any)
		var clusters []any
		for _, c := range res["clusters"].([]any) {
			c := c.(map[string]any)
			if c["name"] == "envoy_admin" {
				continue
			}
			delete(c, "load_assignment")
			delete(c, "type")
			clusters = append(clusters, c)
		}
		res["clusters"] = clusters
		delete(res, "listeners")
		return m
	}
	local, pod := read(filepath.Join(moduleRoot(t), "envoy", "bootstrap.yaml")), read("base/envoy/bootstrap.yaml")
	if !reflect.DeepEqual(local, pod) {
		a, _ := json.MarshalIndent(local, "", " ")
		b, _ := json.MarshalIndent(pod, "", " ")
		t.Errorf("the bootstraps differ beyond addresses:\nenvoy/bootstrap.yaml: %s\npod: %s", a, b)
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

func container(t *testing.T, d *appsv1.Deployment, name string) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("deployment %s has no container %s", d.Name, name)
	return corev1.Container{}
}

// expand returns a container's args with $(VAR) references replaced by
// placeholders, failing for a variable the container does not define.
func expand(t *testing.T, c corev1.Container) []string {
	t.Helper()
	defined := map[string]bool{}
	for _, e := range c.Env {
		defined[e.Name] = true
	}
	var out []string
	for _, a := range c.Args {
		out = append(out, regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(a, func(ref string) string {
			name := ref[2 : len(ref)-1]
			if !defined[name] {
				t.Errorf("%s: args use $(%s), which its env does not define", c.Name, name)
			}
			return "example-" + strings.ToLower(name)
		}))
	}
	return out
}

func flagValue(t *testing.T, c corev1.Container, name string) string {
	t.Helper()
	i := slices.Index(c.Args, name)
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("%s sets no %s", c.Name, name)
	}
	return c.Args[i+1]
}

func flagPort(t *testing.T, c corev1.Container, name string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(flagValue(t, c, name))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(port)
	return n
}

func namedPort(t *testing.T, c corev1.Container, name string) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort)
		}
	}
	t.Fatalf("%s has no port %q", c.Name, name)
	return 0
}

func checkProbePort(t *testing.T, owner string, c corev1.Container, p *corev1.Probe) {
	t.Helper()
	var port string
	switch {
	case p.HTTPGet != nil:
		port = p.HTTPGet.Port.StrVal
	case p.TCPSocket != nil:
		port = p.TCPSocket.Port.StrVal
	case p.Exec != nil:
		return
	}
	if port == "" {
		t.Errorf("%s/%s: probes name their port", owner, c.Name)
		return
	}
	namedPort(t, c, port)
}

func mountPath(t *testing.T, c corev1.Container, volume string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	t.Fatalf("%s does not mount %s", c.Name, volume)
	return ""
}

func volumeAt(t *testing.T, c corev1.Container, path string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return m.Name
		}
	}
	t.Errorf("%s mounts nothing at %s", c.Name, path)
	return ""
}

func emptyDir(d *appsv1.Deployment, volume string) *corev1.EmptyDirVolumeSource {
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == volume {
			return v.EmptyDir
		}
	}
	return nil
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

func matchesAny(selector map[string]string, deps map[string]*appsv1.Deployment) bool {
	for _, d := range deps {
		if selects(selector, d.Spec.Template.Labels) {
			return true
		}
	}
	return false
}

func compilePolicy(t *testing.T, cm *corev1.ConfigMap) *policy.Policy {
	t.Helper()
	var files []policy.File
	for name, data := range cm.Data {
		files = append(files, policy.File{Name: name, Data: []byte(data)})
	}
	slices.SortFunc(files, func(a, b policy.File) int { return strings.Compare(a.Name, b.Name) })
	p, err := policy.Compile(files)
	if err != nil {
		t.Fatalf("the policy ConfigMap does not compile: %v", err)
	}
	return p
}

// envoyBootstrap is the part of Envoy's bootstrap the addresses are in.
type envoyBootstrap struct {
	StaticResources struct {
		Listeners []struct {
			Name    string `yaml:"name"`
			Address struct {
				SocketAddress struct {
					PortValue int `yaml:"port_value"`
				} `yaml:"socket_address"`
			} `yaml:"address"`
		} `yaml:"listeners"`
		Clusters []struct {
			Name           string `yaml:"name"`
			LoadAssignment struct {
				Endpoints []struct {
					LbEndpoints []struct {
						Endpoint struct {
							Address struct {
								SocketAddress *struct {
									Address   string `yaml:"address"`
									PortValue int    `yaml:"port_value"`
								} `yaml:"socket_address"`
								Pipe *struct {
									Path string `yaml:"path"`
								} `yaml:"pipe"`
							} `yaml:"address"`
						} `yaml:"endpoint"`
					} `yaml:"lb_endpoints"`
				} `yaml:"endpoints"`
			} `yaml:"load_assignment"`
		} `yaml:"clusters"`
	} `yaml:"static_resources"`
}

func bootstrap(t *testing.T, data string) *envoyBootstrap {
	t.Helper()
	var b envoyBootstrap
	if err := yaml.Unmarshal([]byte(data), &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

func (b *envoyBootstrap) endpoint(t *testing.T, cluster string) (host string, port int, pipe string) {
	t.Helper()
	for _, c := range b.StaticResources.Clusters {
		if c.Name == cluster && len(c.LoadAssignment.Endpoints) == 1 && len(c.LoadAssignment.Endpoints[0].LbEndpoints) == 1 {
			a := c.LoadAssignment.Endpoints[0].LbEndpoints[0].Endpoint.Address
			if a.Pipe != nil {
				return "", 0, a.Pipe.Path
			}
			if a.SocketAddress != nil {
				return a.SocketAddress.Address, a.SocketAddress.PortValue, ""
			}
		}
	}
	t.Fatalf("bootstrap: no single endpoint for cluster %s", cluster)
	return "", 0, ""
}

func (b *envoyBootstrap) socket(t *testing.T, cluster string) (string, int) {
	t.Helper()
	host, port, _ := b.endpoint(t, cluster)
	if host == "" {
		t.Fatalf("bootstrap: cluster %s is not reached over TCP", cluster)
	}
	return host, port
}

func (b *envoyBootstrap) pipe(t *testing.T, cluster string) string {
	t.Helper()
	_, _, pipe := b.endpoint(t, cluster)
	if pipe == "" {
		t.Fatalf("bootstrap: cluster %s is not reached over a Unix socket", cluster)
	}
	return pipe
}

func (b *envoyBootstrap) listenerPort(t *testing.T, name string) int {
	t.Helper()
	for _, l := range b.StaticResources.Listeners {
		if l.Name == name {
			return l.Address.SocketAddress.PortValue
		}
	}
	t.Fatalf("bootstrap: no listener %s", name)
	return 0
}
