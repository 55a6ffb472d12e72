package k8s

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// target is a kustomization the tests build: a directory of this module,
// or an overlay of one with components, written to a temporary directory.
type target struct {
	name       string // for messages: "overlays/prod", "overlays/prod+components/keda"
	dir        string // the kustomization's directory (relative to this module)
	components []string
}

// targets are every overlay, and each optional component on top of the
// overlay it is meant for (docs/deploy.md).
var targets = []target{
	{name: "overlays/dev", dir: "overlays/dev"},
	{name: "overlays/prod", dir: "overlays/prod"},
	{name: "overlays/prod-services", dir: "overlays/prod-services"},
	{name: "overlays/prod-services+components/keda", dir: "overlays/prod-services", components: []string{"components/keda"}},
	{name: "overlays/prod+components/keda", dir: "overlays/prod", components: []string{"components/keda"}},
	{name: "overlays/prod+components/prometheus", dir: "overlays/prod", components: []string{"components/prometheus"}},
	{name: "overlays/prod+components/nats-creds", dir: "overlays/prod", components: []string{"components/nats-creds"}},
	{name: "overlays/dev+components/prometheus+components/nats-creds", dir: "overlays/dev", components: []string{"components/prometheus", "components/nats-creds"}},
	{name: "overlays/prod+components/nats-auth+components/nats-creds", dir: "overlays/prod", components: []string{"components/nats-auth", "components/nats-creds"}},
	{name: "overlays/dev+components/nats-auth+components/nats-creds", dir: "overlays/dev", components: []string{"components/nats-auth", "components/nats-creds"}},
	{name: "overlays/dev+components/console", dir: "overlays/dev", components: []string{"components/console"}},
	{name: "overlays/prod+components/console+components/prometheus", dir: "overlays/prod", components: []string{"components/console", "components/prometheus"}},
}

// object is one built object: its raw form (as kustomize wrote it) and,
// after decoding, its typed form.
type object struct {
	Kind, Name, Namespace string
	Raw                   map[string]any
	JSON                  []byte
	Typed                 any // *appsv1.Deployment, ... or a local CRD struct
}

func (o *object) String() string { return o.Kind + "/" + o.Name }

// built is the output of one target.
type built struct {
	target  target
	objects []*object
}

// kustomizeBuild builds t in-process with the kustomize API (the library
// `kubectl kustomize` uses) and returns its objects, raw.
func kustomizeBuild(t *testing.T, tg target) []*object {
	t.Helper()
	dir := tg.dir
	if len(tg.components) > 0 {
		// An overlay of the overlay, as a user writes it: resources: [the
		// overlay], components: [...]. It must sit below this module so the
		// relative paths resolve; removed at the end of the test.
		tmp, err := os.MkdirTemp(".", ".overlay-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(tmp) })
		var b strings.Builder
		b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../" + tg.dir + "\ncomponents:\n")
		for _, c := range tg.components {
			b.WriteString("  - ../" + c + "\n")
		}
		if err := os.WriteFile(filepath.Join(tmp, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		dir = tmp
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", tg.name, err)
	}
	var out []*object
	for _, r := range m.Resources() {
		raw, err := r.Map()
		if err != nil {
			t.Fatalf("%s: %s: %v", tg.name, r.CurId(), err)
		}
		js, err := json.Marshal(raw)
		if err != nil {
			t.Fatalf("%s: %s: %v", tg.name, r.CurId(), err)
		}
		out = append(out, &object{Kind: r.GetKind(), Name: r.GetName(), Namespace: r.GetNamespace(), Raw: raw, JSON: js})
	}
	return out
}

// newTyped returns a pointer to the Go type of a kind, or nil for a kind
// these manifests must not contain.
func newTyped(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "v1 Namespace":
		return &corev1.Namespace{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 Service":
		return &corev1.Service{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "keda.sh/v1alpha1 ScaledObject":
		return &scaledObject{}
	case "monitoring.coreos.com/v1 PodMonitor":
		return &podMonitor{}
	}
	return nil
}

// decodeStrict decodes every object into its type, failing on an unknown
// or duplicated field (case-sensitive, as the API server's strict field
// validation), and on a kind these manifests must not have.
func decodeStrict(t *testing.T, name string, objs []*object) {
	t.Helper()
	for _, o := range objs {
		av, _ := o.Raw["apiVersion"].(string)
		typed := newTyped(av, o.Kind)
		if typed == nil {
			t.Errorf("%s: %s: apiVersion %q kind %q is not one these manifests may use (add it to newTyped with its type)", name, o, av, o.Kind)
			continue
		}
		strict, err := sigsjson.UnmarshalStrict(o.JSON, typed)
		if err != nil {
			t.Errorf("%s: %s: does not decode as %T: %v", name, o, typed, err)
			continue
		}
		for _, e := range strict {
			t.Errorf("%s: %s: %v", name, o, e)
		}
		o.Typed = typed
	}
}

// buildAll builds and strictly decodes every target once per test binary.
var buildCache = map[string]*built{}

func build(t *testing.T, tg target) *built {
	t.Helper()
	if b, ok := buildCache[tg.name]; ok {
		return b
	}
	objs := kustomizeBuild(t, tg)
	decodeStrict(t, tg.name, objs)
	if t.Failed() {
		t.FailNow()
	}
	b := &built{target: tg, objects: objs}
	buildCache[tg.name] = b
	return b
}

func buildByName(t *testing.T, name string) *built {
	t.Helper()
	for _, tg := range targets {
		if tg.name == name {
			return build(t, tg)
		}
	}
	t.Fatalf("no target %q", name)
	return nil
}

// find returns the objects of a kind, in build order.
func (b *built) find(kind string) []*object {
	var out []*object
	for _, o := range b.objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

func (b *built) get(kind, name string) *object {
	for _, o := range b.objects {
		if o.Kind == kind && o.Name == name {
			return o
		}
	}
	return nil
}

// workload is a Deployment or StatefulSet seen through its pod template.
type workload struct {
	obj      *object
	replicas *int32
	selector map[string]string // matchLabels (these manifests use no expressions)
	tmpl     *corev1.PodTemplateSpec
}

// hasNATS reports whether the build runs NATS itself (otherwise NATS is
// external: the Helm chart of docs/deploy.md, with the same names).
func (b *built) hasNATS() bool {
	for _, w := range b.workloads() {
		if w.tmpl.Labels["app.kubernetes.io/name"] == "nats" {
			return true
		}
	}
	return false
}

func (b *built) workloads() []workload {
	var out []workload
	for _, o := range b.objects {
		switch v := o.Typed.(type) {
		case *appsv1.Deployment:
			out = append(out, workload{o, v.Spec.Replicas, v.Spec.Selector.MatchLabels, &v.Spec.Template})
		case *appsv1.StatefulSet:
			out = append(out, workload{o, v.Spec.Replicas, v.Spec.Selector.MatchLabels, &v.Spec.Template})
		}
	}
	return out
}

// scaledObject is the part of KEDA's ScaledObject (keda.sh/v1alpha1) these
// manifests use; unknown fields fail the strict decode.
type scaledObject struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   crdMeta          `json:"metadata"`
	Spec       scaledObjectSpec `json:"spec"`
}

type crdMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type scaledObjectSpec struct {
	ScaleTargetRef struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
		Name       string `json:"name"`
	} `json:"scaleTargetRef"`
	MinReplicaCount *int32 `json:"minReplicaCount,omitempty"`
	MaxReplicaCount *int32 `json:"maxReplicaCount,omitempty"`
	PollingInterval *int32 `json:"pollingInterval,omitempty"`
	CooldownPeriod  *int32 `json:"cooldownPeriod,omitempty"`
	Triggers        []struct {
		Type     string            `json:"type"`
		Metadata map[string]string `json:"metadata"`
	} `json:"triggers"`
}

// podMonitor is the part of the Prometheus Operator's PodMonitor
// (monitoring.coreos.com/v1) these manifests use.
type podMonitor struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Metadata   crdMeta `json:"metadata"`
	Spec       struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		PodMetricsEndpoints []struct {
			Port        string `json:"port"`
			Path        string `json:"path"`
			Interval    string `json:"interval,omitempty"`
			Relabelings []struct {
				SourceLabels []string `json:"sourceLabels,omitempty"`
				TargetLabel  string   `json:"targetLabel,omitempty"`
			} `json:"relabelings,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// matches reports whether labels carry every key=value of selector; an
// empty selector matches nothing here (these manifests never mean "all").
func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// normalize turns YAML/JSON objects into comparable generic values.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// jsonIndent is for failure messages.
func jsonIndent(v any) string {
	var buf bytes.Buffer
	b, _ := json.Marshal(v)
	_ = json.Indent(&buf, b, "", "  ")
	return buf.String()
}
