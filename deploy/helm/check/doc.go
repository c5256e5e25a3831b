// Package check renders the agentrun Helm chart (deploy/helm/agentrun) with the real Helm (its
// chart loader, linter and install action in client-only dry-run mode, as `helm template` does)
// and checks every manifest it makes against Kubernetes' own types and schema: each is decoded
// strictly into its typed k8s.io/api object (an unknown or duplicated field, or a wrong type, is
// an error) and validated against the structural schema client-go ships for server-side apply
// (generated from Kubernetes' OpenAPI document), then checked for what the deployment relies on.
// It is its own module so that the server's go.mod does not carry Helm and the Kubernetes
// libraries; .ci/run runs its tests.
package check
