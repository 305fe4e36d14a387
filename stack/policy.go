package stack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/configs/policy"
	"github.com/switchyard/switchyard/envoy/contract"
)

// copyPolicy copies the policy files of src into dst, with the overlay's
// files replacing or joining them, pointing each provider that simulated
// names at its simulator (marking it simulated) and the gateway at listen.
// Only those values change; everything else is the policy as written.
func copyPolicy(src, dst string, simulated func(name string) (url string, ok bool), listen string, overlay map[string]string) error {
	files, err := policy.ReadDir(src)
	if err != nil {
		return err
	}
	for name, content := range overlay {
		i := slices.IndexFunc(files, func(f policy.File) bool { return filepath.Base(f.Name) == name })
		if i < 0 {
			files = append(files, policy.File{Name: name})
			i = len(files) - 1
		}
		files[i].Data = []byte(content)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		var doc yaml.Node
		if err := yaml.Unmarshal(f.Data, &doc); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if len(doc.Content) > 0 {
			root := doc.Content[0]
			for _, p := range seq(mapValue(root, "providers")) {
				name := mapValue(p, "name")
				if name == nil {
					continue
				}
				if u, ok := simulated(name.Value); ok {
					setScalar(p, "base_url", u)
					setNode(p, "simulated", "!!bool", "true")
				}
			}
			if gw := mapValue(root, "gateway"); gw != nil && listen != "" {
				setScalar(gw, "listen", listen)
			}
		}
		out, err := marshal(&doc)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f.Name)), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func seq(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	return n.Content
}

func setScalar(m *yaml.Node, key, value string) { setNode(m, key, "!!str", value) }

func setNode(m *yaml.Node, key, tag, value string) {
	if v := mapValue(m, key); v != nil {
		v.Kind, v.Tag, v.Value, v.Style = yaml.ScalarNode, tag, value, 0
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value})
}

// bootstrap renders envoy/bootstrap.yaml with this stack's addresses:
// its ports and its ext_proc's socket.
func bootstrap(root, out string, adminPort, xdsPort int, extprocSocket, nodeID string) error {
	data, err := os.ReadFile(filepath.Join(root, "envoy", "bootstrap.yaml"))
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	root0 := doc.Content[0]
	setScalar(mapValue(root0, "node"), "id", nodeID)
	setPort(mapValue(mapValue(mapValue(root0, "admin"), "address"), "socket_address"), adminPort)
	for _, c := range seq(mapValue(mapValue(root0, "static_resources"), "clusters")) {
		name := mapValue(c, "name").Value
		for _, ep := range seq(mapValue(mapValue(c, "load_assignment"), "endpoints")) {
			for _, lb := range seq(mapValue(ep, "lb_endpoints")) {
				a := mapValue(mapValue(lb, "endpoint"), "address")
				switch name {
				case "xds":
					setPort(mapValue(a, "socket_address"), xdsPort)
				case contract.ExtProcCluster, contract.ExtProcAttemptCluster:
					pipe := mapValue(a, "pipe")
					if pipe == nil {
						return fmt.Errorf("envoy/bootstrap.yaml: cluster %s is not reached over a Unix socket (pipe)", name)
					}
					setScalar(pipe, "path", extprocSocket)
				}
			}
		}
	}
	b, err := marshal(&doc)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// marshal writes YAML with the two-space indentation of the files in the
// repository, so a test can append to a copied file as an operator would.
func marshal(doc *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

func setPort(sa *yaml.Node, port int) {
	if v := mapValue(sa, "port_value"); v != nil {
		v.Kind, v.Tag, v.Value = yaml.ScalarNode, "!!int", fmt.Sprint(port)
	}
}
