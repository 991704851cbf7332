// Package helm holds the tests of Ferry's Helm chart, deploy/helm/ferry. It has no code
// of its own: the chart is rendered by `make k8s-manifests` (helm lint and helm template,
// Helm built from the Go module proxy at a pinned version) into the checked-in plain
// manifests deploy/k8s/small/ferry.yaml and deploy/k8s/production/ferry.yaml and, with
// the test values testdata/secrets-values.yaml, into testdata/secrets.yaml; `make
// k8s-check` fails when a rendering is out of date. The tests decode every rendered
// object strictly against the Kubernetes API types (an unknown field is an error), load
// every configuration file the pods run with Ferry's own loader (package conf, unknown
// keys refused) and check the deployment's invariants: probes on /readyz and /healthz,
// disruption budgets that never take two members of a group or a controller majority
// down, an odd number of controllers, no Secret value in a ConfigMap, and the image and
// controller-mode settings of the compose deployment (deploy/docker-compose.controller.yml).
// With the build tag k8ssmoke (`make k8s-smoke`, Docker) the small profile's pods run as
// containers set up as their manifests say.
package helm
