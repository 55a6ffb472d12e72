package auth

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// DocPrefix is the tool prefix Markdown shows for the per-prefix tool
// provider role.
const DocPrefix = "PREFIX"

// DocSite is the edge site Markdown shows for the per-site leaf node role.
const DocSite = "SITE"

// Markdown renders the permission table for docs/security.md: for each
// role of the table with a tool provider for DocPrefix and an edge site
// DocSite, who uses it, how it
// answers requests, its inbox, and its publish, subscribe and refused
// subjects grouped by reason; a grant that only an option of `skillbus
// auth` adds (Grant.OptIn) is shown under that option's name. The text
// between the roles markers of docs/security.md is exactly this (a test
// checks it).
func Markdown() string {
	roles, err := Table(TableOptions{ToolPrefixes: []string{DocPrefix}, EdgeSites: []string{DocSite}, ConsoleCallsTools: true})
	if err != nil {
		panic(err) // DocPrefix and DocSite are valid
	}
	var b strings.Builder
	for _, r := range roles {
		fmt.Fprintf(&b, "#### `%s`\n\n", r.Name)
		fmt.Fprintf(&b, "%s%s.\n\n", strings.ToUpper(r.Summary[:1]), r.Summary[1:])
		fmt.Fprintf(&b, "Creds `creds/%s.creds`, Kubernetes Secret `%s`, inbox prefix `%s`", r.Name, SecretName(r.Name), r.InboxPrefix())
		switch {
		case r.Site != "":
			fmt.Fprintf(&b, "; a leaf node connection only (`%s`, `%s`), its lists applied by the hub to what crosses the link — publish: from the site to the hub, subscribe: from the hub to the site; its replies cross the link only to the inboxes it may publish to (allow_responses, set for up to %s, does not cross a leaf node connection: nats-server issue #2949)", LeafNodesConfFile, LeafConfFile, hours(ResponseWindow))
		case r.Responds && r.Progresses:
			fmt.Fprintf(&b, "; answers the requests it receives (allow_responses: any number of messages each — an acknowledgement and keep-alives, then the reply — within %s)", hours(ResponseWindow))
		case r.Responds:
			fmt.Fprintf(&b, "; answers the requests it receives (allow_responses: one reply each, within %s)", hours(ResponseWindow))
		}
		b.WriteString(".\n\n| | subjects | for |\n|---|---|---|\n")
		rows(&b, "publish", r.Pub)
		rows(&b, "subscribe", r.Sub)
		rows(&b, "refused", r.DenyPub)
		b.WriteString("\n")
	}
	return b.String()
}

// rows writes one table row per reason (and option), its subjects in
// table order.
func rows(b *strings.Builder, what string, gs []Grant) {
	type key struct{ why, optIn string }
	var order []key
	by := map[key][]string{}
	for _, g := range gs {
		k := key{g.Why, g.OptIn}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], "`"+strings.ReplaceAll(g.Subject, "|", `\|`)+"`")
	}
	for _, k := range order {
		w := what
		if k.optIn != "" {
			w += " (only with `skillbus auth " + k.optIn + "`)"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", w, strings.Join(by[k], " "), k.why)
	}
}

// SecretName returns the Kubernetes Secret of role's creds:
// skillbus-<role>-creds, the names deploy/k8s/components/nats-creds mounts.
func SecretName(role string) string { return "skillbus-" + role + "-creds" }

// AuthSecretName is the Kubernetes Secret holding auth.conf, for the NATS
// servers (docs/security.md, Kubernetes).
const AuthSecretName = "skillbus-nats-auth"

// K8sSecrets returns the setup as Kubernetes Secrets, one YAML document
// each: skillbus-<role>-creds (key nats.creds) for every role — an edge
// site's with its leafnodes.conf too, reading the creds from
// EdgeMountDir (docs/edge.md) — and
// skillbus-nats-auth (key auth.conf) for the servers; the system user's
// creds stay in the directory (no pod needs them). An
// empty namespace leaves it to kubectl's -n. Errors: a creds file that
// cannot be read.
func (s *Setup) K8sSecrets(namespace string) ([]byte, error) {
	type meta struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace,omitempty"`
		Labels    map[string]string `yaml:"labels"`
	}
	type secret struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   meta              `yaml:"metadata"`
		Type       string            `yaml:"type"`
		StringData map[string]string `yaml:"stringData"`
	}
	mk := func(name, component, key, value string) secret {
		return secret{APIVersion: "v1", Kind: "Secret", Type: "Opaque",
			Metadata: meta{Name: name, Namespace: namespace, Labels: map[string]string{
				"app.kubernetes.io/name": "skillbus", "app.kubernetes.io/component": component, "app.kubernetes.io/managed-by": "skillbus-auth"}},
			StringData: map[string]string{key: value}}
	}
	var docs []secret
	for _, r := range s.Roles {
		b, err := os.ReadFile(s.CredsFile(r.Name))
		if err != nil {
			return nil, err
		}
		d := mk(SecretName(r.Name), r.Name, "nats.creds", string(b))
		if r.Site != "" {
			// The site's leaf server mounts the Secret at EdgeMountDir.
			d.StringData[LeafNodesConfFile] = leafNodesConf(r.Site, s.LeafURL, EdgeMountDir+"/nats.creds")
		}
		docs = append(docs, d)
	}
	b, err := os.ReadFile(s.AuthConfig())
	if err != nil {
		return nil, err
	}
	docs = append(docs, mk(AuthSecretName, "nats", AuthConfFile, string(b)))
	var out strings.Builder
	out.WriteString("# skillbus: NATS credentials for Kubernetes, generated by `skillbus auth -o k8s` (docs/security.md).\n")
	out.WriteString("# They are secrets: apply them (kubectl apply -f), never commit them.\n")
	for _, d := range docs {
		var y bytes.Buffer
		enc := yaml.NewEncoder(&y)
		enc.SetIndent(2)
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(y.Bytes())
	}
	return []byte(out.String()), nil
}

// hours writes a whole number of hours as "1 hour", "2 hours".
func hours(d time.Duration) string {
	if h := int(d / time.Hour); time.Duration(h)*time.Hour == d {
		if h == 1 {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", h)
	}
	return d.String()
}
