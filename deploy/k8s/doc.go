// Package k8s holds skillbus's Kubernetes manifests (kustomize) and the
// tests that prove them without a cluster; it has no code of its own. It is
// a Go module apart from github.com/skillbus/skillbus, so the kustomize and
// Kubernetes API libraries the tests need stay out of the main module.
//
// Layout (docs/deploy.md is the user's guide):
//
//	base/                  registry, seqworker, skillface and the built-in tools
//	                       (Deployments, ServiceAccounts, PodDisruptionBudgets,
//	                       a NetworkPolicy, the skills and sequences ConfigMaps)
//	nats/single            one NATS server with JetStream (for overlays/dev)
//	nats/cluster           a 3-node JetStream cluster (for overlays/prod)
//	overlays/dev           one replica of everything and nats/single
//	overlays/prod-services the services of production (NATS from the Helm chart):
//	                       3 replicas of every stream and bucket,
//	                       3 seqworkers, an autoscaler for skillface
//	overlays/prod          overlays/prod-services and nats/cluster
//	components/keda        seqworkers scaled on the SEQ_RUNS backlog (KEDA)
//	components/prometheus  a PodMonitor for /metrics
//	components/nats-creds  one NATS user per service, from Secrets
//	components/nats-auth   the NATS servers trust the users of `skillbus auth`
//	                       (its auth.conf from a Secret; docs/security.md)
//	helm/nats-values.yaml  values for the official NATS Helm chart
//	grafana/               a dashboard of the services' metrics
//	../helm/skillbus       the Helm chart of the same objects (tested here)
//
// The tests (go test ./... in this directory):
//
//   - manifests_test.go builds every overlay and component with the
//     kustomize API, decodes each object strictly into its Kubernetes API
//     type and checks the invariants docs/deploy.md promises;
//   - helm_test.go renders ../helm/skillbus with Helm's Go packages (default,
//     production and every option), checks the same invariants, compares the
//     production objects with overlays/prod-services (every difference
//     listed with its reason), the values schema, NOTES.txt and helm lint;
//   - dockerfile_test.go checks the Dockerfile at the repository root;
//   - process_test.go starts the binaries exactly as the prod overlay's
//     containers describe them, against a local 3-node NATS cluster, and
//     runs a sequence through them.
package k8s
