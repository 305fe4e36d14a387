package policy

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard/switchyard/configs/yamlval"
)

// nodeError is a decoding error located at a node ([yamlval.NodeError]).
type nodeError = yamlval.NodeError

func errAt(n *yaml.Node, format string, args ...any) error { return yamlval.ErrAt(n, format, args...) }

// Duration is a time.Duration written as "30s" or "5m".
type Duration = yamlval.Duration

// ByteSize is a size written as "10MiB", "512KiB" or a plain byte count.
type ByteSize = yamlval.ByteSize

// UnmarshalYAML implements [yaml.Unmarshaler] for the two spellings of a
// filter: "name", "name=arg1,arg2" or {name: ..., args: {...}}.
func (f *FilterSpec) UnmarshalYAML(n *yaml.Node) error {
	f.line, f.col = n.Line, n.Column
	switch n.Kind {
	case yaml.ScalarNode:
		name, args, found := strings.Cut(n.Value, "=")
		f.Name = strings.TrimSpace(name)
		if found {
			for _, a := range strings.Split(args, ",") {
				f.Shorthand = append(f.Shorthand, strings.TrimSpace(a))
			}
		}
		return nil
	case yaml.MappingNode:
		var raw struct {
			Name string         `yaml:"name"`
			Args map[string]any `yaml:"args"`
		}
		for i := 0; i < len(n.Content); i += 2 {
			if k := n.Content[i].Value; k != "name" && k != "args" {
				return errAt(n.Content[i], "unknown filter field %q (known: name, args)", k)
			}
		}
		if err := n.Decode(&raw); err != nil {
			return err
		}
		f.Name, f.Args = raw.Name, raw.Args
		return nil
	default:
		return errAt(n, "must be a filter name or {name, args}")
	}
}
