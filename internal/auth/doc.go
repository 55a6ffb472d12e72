// Package auth is skillbus's NATS security model: the permission table of
// every role (Roles) — which subjects each NATS user of a deployment may
// publish to and subscribe to, JetStream API, KV, object store and stream
// subjects included — and its generation (Generate): an operator, the
// skillbus account with JetStream limits, the system account, one user per
// role with exactly its role's permissions, their creds files and nats CLI
// contexts, a nats-server configuration (operator mode, MEMORY resolver)
// and Kubernetes Secrets (K8sSecrets).
//
// The table is data: docs/security.md renders it (Markdown) and a test
// keeps the two equal, and the integration tests in test/integration run
// the whole stack with each service on its own user and check that every
// forbidden action is refused by the server.
//
// Each role has a private inbox prefix, _INBOX.<role>: replies (assembled
// prompts, tool results, run states) reach only the user that asked. A
// client must use it as its inbox prefix; internal/natsconn does so by
// itself from the creds file (InboxPrefixOf).
package auth
