// Package kubernetes is the Kubernetes deployment of opentool-host: a
// kustomize base (kustomization.yaml and the files it names; render it with
// kubectl kustomize) and nothing else. It holds no Go code: its tests
// render the base with the kustomize engine of kubectl, decode every object
// strictly against the k8s.io/api types, check that the objects fit
// together and that the host accepts their files, and run the real host
// with the Deployment's arguments.
package kubernetes
