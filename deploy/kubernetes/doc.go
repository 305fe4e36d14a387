// Package kubernetes holds Switchyard's Kubernetes manifests (a kustomize
// base and overlays) and the test that renders them offline, decodes every
// object strictly into its k8s.io/api type, and checks the containers'
// arguments against the binaries' flags and the ports against Envoy's
// bootstrap. Only this package's test links the Kubernetes modules.
package kubernetes
