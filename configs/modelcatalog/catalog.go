// Package modelcatalog ships Switchyard's model catalog: what each model the
// project knows is (its vendor's id, context window, output cap,
// capabilities), what it costs (USD per million tokens, cached input,
// long-context tiers, server tools per use) and when its vendor retires
// it. It is data only, in one YAML file compiled into every binary, so
// that every policy — configs/local, configs/examples/real-providers, an
// operator's own — and every process reading one (xds, ext_proc,
// `make check-config`) knows the same models. configs/policy merges it
// under the policy's own sections; docs/MODELS.md cites each figure.
package modelcatalog

import _ "embed"

// Name is the file the catalog is read from, as policy errors name it.
const Name = "configs/modelcatalog/catalog.yaml"

// YAML is the catalog, in the policy's own syntax (a top-level catalog
// section).
//
//go:embed catalog.yaml
var YAML []byte
