package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// nodeError is a decoding error located at a node, so the loader can
// report its file, line, column and field like any other problem.
type nodeError struct {
	node *yaml.Node
	msg  string
}

func (e *nodeError) Error() string { return fmt.Sprintf("line %d: %s", e.node.Line, e.msg) }

func errAt(n *yaml.Node, format string, args ...any) error {
	return &nodeError{node: n, msg: fmt.Sprintf(format, args...)}
}

// Duration is a time.Duration written as "30s" or "5m".
type Duration time.Duration

// UnmarshalYAML implements [yaml.Unmarshaler].
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errAt(n, "must be a duration such as 30s")
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return errAt(n, "must be a non-negative duration such as 30s, got %q", n.Value)
	}
	*d = Duration(v)
	return nil
}

// ByteSize is a size written as "10MiB", "512KiB" or a plain byte count.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}}

// UnmarshalYAML implements [yaml.Unmarshaler].
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errAt(n, "must be a size such as 10MiB")
	}
	s := strings.TrimSpace(n.Value)
	mult := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<40)/mult {
		return errAt(n, "must be a size such as 10MiB, got %q", n.Value)
	}
	*b = ByteSize(v * mult)
	return nil
}

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
