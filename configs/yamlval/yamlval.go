// Package yamlval holds the value types the policy's YAML and the filters'
// declared arguments share: durations, byte sizes and secret references,
// each decoded with errors located at their node, so a loader reports the
// file, line and field of a bad value.
package yamlval

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// NodeError is a decoding error located at a node, so the loader can
// report its file, line, column and field like any other problem.
type NodeError struct {
	Node *yaml.Node
	Msg  string
}

func (e *NodeError) Error() string { return fmt.Sprintf("line %d: %s", e.Node.Line, e.Msg) }

// ErrAt is a [NodeError] at n.
func ErrAt(n *yaml.Node, format string, args ...any) error {
	return &NodeError{Node: n, Msg: fmt.Sprintf(format, args...)}
}

// Duration is a time.Duration written as "30s" or "5m".
type Duration time.Duration

// UnmarshalYAML implements [yaml.Unmarshaler].
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return ErrAt(n, "must be a duration such as 30s")
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return ErrAt(n, "must be a non-negative duration such as 30s, got %q", n.Value)
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
		return ErrAt(n, "must be a size such as 10MiB")
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
		return ErrAt(n, "must be a size such as 10MiB, got %q", n.Value)
	}
	*b = ByteSize(v * mult)
	return nil
}

// SecretRef says where a secret is read from: an environment variable or a
// file. Exactly one is set.
type SecretRef struct {
	Env  string `yaml:"env"`
	File string `yaml:"file"`
}
