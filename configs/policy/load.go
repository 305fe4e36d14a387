package policy

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// source locates a list element of the spec in its file.
type source struct {
	file string
	path string // canonical path within the file, e.g. providers[3]
}

// File is one policy file's name and content.
type File struct {
	Name string
	Data []byte
}

// Load reads every *.yaml and *.yml file of dir (not recursive) and
// compiles them into one Policy. The error, if any, is a [Problems].
func Load(dir string) (*Policy, error) {
	files, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return Compile(files)
}

// ReadDir returns the policy files of dir in name order.
func ReadDir(dir string) ([]File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading policy directory: %w", err)
	}
	var files []File
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading policy file: %w", err)
		}
		files = append(files, File{Name: p, Data: data})
	}
	if len(files) == 0 {
		return nil, Problems{{File: dir, Reason: "no *.yaml policy files"}}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// Compile decodes, validates and compiles policy files, with the shipped
// model catalog (configs/modelcatalog) read before them.
func Compile(files []File) (*Policy, error) {
	var (
		merged Spec
		probs  Problems
		idx    = nodeIndex{}
	)
	files = withCatalog(files)
	for _, f := range files {
		spec, ps := decodeFile(f, idx)
		probs = append(probs, ps...)
		if spec == nil {
			continue
		}
		if spec.Gateway != nil {
			if merged.Gateway != nil {
				n := idx.lookup(f.Name, "gateway")
				probs = append(probs, Problem{File: f.Name, Line: n.Line, Column: n.Column, Field: "gateway", Reason: "the gateway section may appear in one file only"})
			} else {
				merged.Gateway = spec.Gateway
			}
		}
		merged.Providers = append(merged.Providers, spec.Providers...)
		merged.Models = append(merged.Models, spec.Models...)
		merged.Routes = append(merged.Routes, spec.Routes...)
		merged.Tenants = append(merged.Tenants, spec.Tenants...)
		merged.Catalog = append(merged.Catalog, spec.Catalog...)
		merged.Aliases = append(merged.Aliases, spec.Aliases...)
	}
	if len(probs) > 0 {
		return nil, probs
	}
	gwFile := ""
	for _, f := range files {
		if idx.lookup(f.Name, "gateway") != nil {
			gwFile = f.Name
		}
	}
	return compile(&merged, idx, gwFile, files)
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

func decodeFile(f File, idx nodeIndex) (*Spec, Problems) {
	var doc yaml.Node
	if err := yaml.Unmarshal(f.Data, &doc); err != nil {
		return nil, Problems{yamlProblem(f.Name, strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return &Spec{}, nil // an empty file is allowed
	}
	root := doc.Content[0]
	var probs Problems
	checkKnown(f.Name, root, reflect.TypeOf(Spec{}), "", idx, &probs)
	if len(probs) > 0 {
		return nil, probs
	}
	var spec Spec
	if err := root.Decode(&spec); err != nil {
		var ne *nodeError
		if errors.As(err, &ne) {
			return nil, Problems{{File: f.Name, Line: ne.Node.Line, Column: ne.Node.Column, Field: idx.pathOf(f.Name, ne.Node), Reason: ne.Msg}}
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			for _, e := range te.Errors {
				probs = append(probs, yamlProblem(f.Name, e))
			}
			return nil, probs
		}
		return nil, Problems{yamlProblem(f.Name, err.Error())}
	}
	for i := range spec.Providers {
		spec.Providers[i].src = source{f.Name, "providers[" + strconv.Itoa(i) + "]"}
	}
	for i := range spec.Models {
		spec.Models[i].src = source{f.Name, "models[" + strconv.Itoa(i) + "]"}
	}
	for i := range spec.Routes {
		spec.Routes[i].src = source{f.Name, "routes[" + strconv.Itoa(i) + "]"}
	}
	for i := range spec.Tenants {
		spec.Tenants[i].src = source{f.Name, "tenants[" + strconv.Itoa(i) + "]"}
	}
	for i := range spec.Catalog {
		spec.Catalog[i].src = source{f.Name, "catalog[" + strconv.Itoa(i) + "]"}
	}
	for i := range spec.Aliases {
		spec.Aliases[i].src = source{f.Name, "aliases[" + strconv.Itoa(i) + "]"}
	}
	return &spec, nil
}

// yamlProblem turns a go-yaml message ("line 3: ...") into a Problem.
func yamlProblem(file, msg string) Problem {
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{File: file, Line: line, Column: 1, Reason: m[2]}
	}
	return Problem{File: file, Reason: msg}
}

// nodeIndex maps file → canonical path → node, so validation can say where.
type nodeIndex map[string]map[string]*yaml.Node

func (x nodeIndex) put(file, path string, n *yaml.Node) {
	m := x[file]
	if m == nil {
		m = map[string]*yaml.Node{}
		x[file] = m
	}
	m[path] = n
}

func (x nodeIndex) lookup(file, path string) *yaml.Node {
	return x[file][path]
}

// pathOf finds the path of a node, for errors raised while decoding it.
func (x nodeIndex) pathOf(file string, n *yaml.Node) string {
	for p, m := range x[file] {
		if m == n {
			return p
		}
	}
	return ""
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// checkKnown walks n against t, reporting unknown fields with their line
// (yaml.v3 only enforces known fields on a Decoder, not on a Node), and
// records every node's position in idx.
func checkKnown(file string, n *yaml.Node, t reflect.Type, path string, idx nodeIndex, probs *Problems) {
	idx.put(file, path, n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Tag == "!!null" {
				return
			}
			*probs = append(*probs, Problem{File: file, Line: n.Line, Column: n.Column, Field: path, Reason: "must be a mapping"})
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			child := joinPath(path, k.Value)
			ft, ok := fields[k.Value]
			if !ok {
				*probs = append(*probs, Problem{File: file, Line: k.Line, Column: k.Column, Field: child, Reason: "unknown field (known: " + strings.Join(sortedKeys(fields), ", ") + ")"})
				continue
			}
			checkKnown(file, v, ft, child, idx, probs)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			if n.Tag == "!!null" {
				return
			}
			*probs = append(*probs, Problem{File: file, Line: n.Line, Column: n.Column, Field: path, Reason: "must be a list"})
			return
		}
		for i, c := range n.Content {
			checkKnown(file, c, t.Elem(), path+"["+strconv.Itoa(i)+"]", idx, probs)
		}
	}
}

func yamlFields(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" {
			maps.Copy(m, yamlFields(f.Type))
			continue
		}
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		m[tag] = f.Type
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
