package k8s

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// TestManifests builds every overlay and component, decodes each object
// strictly into its API type, and checks the invariants of docs/deploy.md
// on each build.
func TestManifests(t *testing.T) {
	for _, tg := range targets {
		t.Run(strings.ReplaceAll(tg.name, "/", "_"), func(t *testing.T) {
			b := build(t, tg)
			checkWorkloads(t, b)
			checkDisruptionBudgets(t, b)
			checkReferences(t, b)
			checkServices(t, b)
			checkNetworkPolicies(t, b)
			checkAutoscalers(t, b)
			checkPodMonitors(t, b)
		})
	}
}

// isSkillbus reports whether a workload is one of skillbus's services (as
// opposed to the NATS server).
func isSkillbus(w workload) bool {
	return w.tmpl.Labels["app.kubernetes.io/name"] == "skillbus"
}

var imageRef = regexp.MustCompile(`^[a-z0-9.\-/:]+?(:([A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}))?(@sha256:[0-9a-f]{64})?$`)

// checkImage: a pinned image (a tag other than latest, or a digest).
func checkImage(t *testing.T, where, image string) {
	t.Helper()
	m := imageRef.FindStringSubmatch(image)
	switch {
	case m == nil:
		t.Errorf("%s: image %q is not a valid reference", where, image)
	case m[2] == "" && m[3] == "":
		t.Errorf("%s: image %q has no tag: that means latest; pin a version", where, image)
	case m[2] == "latest":
		t.Errorf("%s: image %q uses the latest tag; pin a version", where, image)
	}
}

// shutdownBudget returns the shutdown budget a skillbus container is given
// (SKILLBUS_SHUTDOWN_BUDGET or --shutdown-budget), or 0 and false.
func shutdownBudget(c corev1.Container) (time.Duration, bool) {
	var s string
	for _, e := range c.Env {
		if e.Name == "SKILLBUS_SHUTDOWN_BUDGET" {
			s = e.Value
		}
	}
	for i, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--shutdown-budget="); ok {
			s = v
		} else if a == "--shutdown-budget" && i+1 < len(c.Args) {
			s = c.Args[i+1]
		}
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d > 0
}

func checkWorkloads(t *testing.T, b *built) {
	ws := b.workloads()
	if len(ws) == 0 {
		t.Fatal("no workloads")
	}
	for _, w := range ws {
		where := w.obj.String()
		spec := &w.tmpl.Spec
		if !matches(w.selector, w.tmpl.Labels) {
			t.Errorf("%s: selector %v does not match the pod labels %v", where, w.selector, w.tmpl.Labels)
		}
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s: automountServiceAccountToken must be false (skillbus never talks to the API server)", where)
		}
		if spec.ServiceAccountName == "" {
			t.Errorf("%s: no serviceAccountName (the default account is shared)", where)
		} else if sa := b.get("ServiceAccount", spec.ServiceAccountName); sa == nil {
			t.Errorf("%s: ServiceAccount %q is not in the build", where, spec.ServiceAccountName)
		} else if a := sa.Typed.(*corev1.ServiceAccount).AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s: automountServiceAccountToken must be false", sa)
		}
		psc := spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("%s: pod securityContext.runAsNonRoot must be true", where)
		}
		if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod securityContext.seccompProfile must be RuntimeDefault", where)
		}
		if isSkillbus(w) && (psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 65532) {
			t.Errorf("%s: runAsUser must be 65532, the image's nonroot user", where)
		}
		if spec.TerminationGracePeriodSeconds == nil {
			t.Errorf("%s: terminationGracePeriodSeconds not set", where)
		}
		if len(spec.InitContainers) > 0 {
			t.Errorf("%s: init containers are not expected", where)
		}
		vols := map[string]corev1.Volume{}
		for _, v := range spec.Volumes {
			vols[v.Name] = v
		}
		for _, c := range spec.Containers {
			cw := where + " container " + c.Name
			checkImage(t, cw, c.Image)
			checkContainerSecurity(t, cw, c)
			checkResources(t, cw, c)
			checkProbes(t, cw, c)
			for _, m := range c.VolumeMounts {
				if _, ok := vols[m.Name]; !ok && !isClaimTemplate(w, m.Name) {
					t.Errorf("%s: volumeMount %q has no volume", cw, m.Name)
				}
			}
			if isSkillbus(w) {
				budget, ok := shutdownBudget(c)
				if !ok {
					t.Errorf("%s: no shutdown budget (SKILLBUS_SHUTDOWN_BUDGET): the grace period cannot be checked against it", cw)
				} else if spec.TerminationGracePeriodSeconds != nil {
					grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
					// The kubelet's clock starts at SIGTERM: the budget
					// plus a few seconds of process exit must fit.
					if grace < budget+5*time.Second {
						t.Errorf("%s: terminationGracePeriodSeconds %v is not above the shutdown budget %v (+5s)", cw, grace, budget)
					}
				}
				if !hasEnv(c, "NATS_URL") {
					t.Errorf("%s: NATS_URL not set", cw)
				}
			} else if c.Name == "nats" && spec.TerminationGracePeriodSeconds != nil {
				ld := natsLameDuck(t, b, w, c)
				if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; grace <= ld {
					t.Errorf("%s: terminationGracePeriodSeconds %v is not above lame_duck_duration %v", cw, grace, ld)
				}
			}
		}
	}
}

func isClaimTemplate(w workload, name string) bool {
	if ss, ok := w.obj.Typed.(*appsv1.StatefulSet); ok {
		for _, c := range ss.Spec.VolumeClaimTemplates {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func checkContainerSecurity(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Errorf("%s: no securityContext", where)
		return
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: readOnlyRootFilesystem must be true", where)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("%s: allowPrivilegeEscalation must be false", where)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("%s: privileged", where)
	}
	if sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("%s: capabilities must drop ALL and add none, got %+v", where, sc.Capabilities)
	}
}

func checkResources(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[r]
		lim, okLim := c.Resources.Limits[r]
		if !okReq || !okLim {
			t.Errorf("%s: %s request and limit must both be set", where, r)
			continue
		}
		if req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %s above its limit %s", where, r, req.String(), lim.String())
		}
	}
}

// checkProbes: liveness, readiness and startup probes, each an HTTP GET on
// a port the container declares (by name or number).
func checkProbes(t *testing.T, where string, c corev1.Container) {
	t.Helper()
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		if p.probe == nil {
			t.Errorf("%s: no %s", where, p.kind)
			continue
		}
		g := p.probe.HTTPGet
		if g == nil {
			t.Errorf("%s: %s is not an HTTP GET", where, p.kind)
			continue
		}
		if !strings.HasPrefix(g.Path, "/") {
			t.Errorf("%s: %s path %q", where, p.kind, g.Path)
		}
		if _, ok := containerPort(c, g.Port); !ok {
			t.Errorf("%s: %s port %s is not a port the container declares", where, p.kind, g.Port.String())
		}
	}
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil &&
		c.LivenessProbe.HTTPGet.Path == c.ReadinessProbe.HTTPGet.Path && strings.HasPrefix(c.Image, "ghcr.io/skillbus/") {
		t.Errorf("%s: liveness and readiness probe the same path %q: a NATS outage would restart the pods", where, c.LivenessProbe.HTTPGet.Path)
	}
}

// containerPort resolves a port by name or number among the container's
// declared ports.
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if p.Type == intstr.String && cp.Name == p.StrVal || p.Type == intstr.Int && cp.ContainerPort == p.IntVal {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

var includeRE = regexp.MustCompile(`(?m)^\s*include\s+"?([^"\s]+)"?`)

var lameDuckRE = regexp.MustCompile(`(?m)^\s*lame_duck_duration\s*[:=]\s*"?(\w+)"?`)

// natsLameDuck reads lame_duck_duration from the nats-server configuration
// a NATS container is started with (--config FILE, found in its ConfigMap
// volume).
func natsLameDuck(t *testing.T, b *built, w workload, c corev1.Container) time.Duration {
	t.Helper()
	conf := ""
	for i, a := range c.Args {
		if (a == "--config" || a == "-c") && i+1 < len(c.Args) {
			conf = c.Args[i+1]
		}
	}
	data, ok := mountedFile(b, w, c, conf)
	if !ok {
		t.Errorf("%s: nats-server config %q is not in a mounted ConfigMap", w.obj, conf)
		return 0
	}
	// Follow includes (relative to the including file, as nats-server
	// does) into mounted ConfigMaps: components/nats-auth's file includes
	// the overlay's nats.conf.
	for _, inc := range includeRE.FindAllStringSubmatch(data, -1) {
		if more, ok := mountedFile(b, w, c, path.Join(path.Dir(conf), inc[1])); ok {
			data += "\n" + more
		}
	}
	m := lameDuckRE.FindStringSubmatch(data)
	if m == nil {
		return 2 * time.Minute // nats-server's default
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Errorf("%s: lame_duck_duration %q: %v", w.obj, m[1], err)
	}
	return d
}

// mountedFile returns the content of the file at path inside container c,
// when it comes from a ConfigMap volume of the build.
func mountedFile(b *built, w workload, c corev1.Container, path string) (string, bool) {
	for _, m := range c.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		for _, v := range w.tmpl.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm := b.get("ConfigMap", v.ConfigMap.Name)
			if cm == nil {
				return "", false
			}
			key := rel
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					key = it.Key
				}
			}
			d, ok := cm.Typed.(*corev1.ConfigMap).Data[key]
			return d, ok
		}
	}
	return "", false
}

// externalSecret reports whether a Secret is meant to be created outside
// these manifests: the per-service NATS credentials and the servers' auth
// block, as `skillbus auth -o k8s` prints them (docs/security.md).
var externalSecret = regexp.MustCompile(`^skillbus-((registry|seqworker|skillface|tools|console)-creds|nats-auth)$`)

// checkReferences: every ConfigMap a pod uses is in the build with the
// keys it projects; every Secret is in the build or one of the documented
// external credentials Secrets; every file of base/library is in a
// ConfigMap and every skill key is projected into the registry's tree.
func checkReferences(t *testing.T, b *built) {
	cmKeys := func(where, name string, items []corev1.KeyToPath) {
		o := b.get("ConfigMap", name)
		if o == nil {
			t.Errorf("%s: ConfigMap %q is not in the build", where, name)
			return
		}
		data := o.Typed.(*corev1.ConfigMap).Data
		for _, it := range items {
			if _, ok := data[it.Key]; !ok {
				t.Errorf("%s: ConfigMap %q has no key %q (keys: %v)", where, name, it.Key, sortedKeys(data))
			}
		}
	}
	for _, w := range b.workloads() {
		for _, v := range w.tmpl.Spec.Volumes {
			where := w.obj.String() + " volume " + v.Name
			switch {
			case v.ConfigMap != nil:
				cmKeys(where, v.ConfigMap.Name, v.ConfigMap.Items)
			case v.Secret != nil:
				if b.get("Secret", v.Secret.SecretName) == nil && !externalSecret.MatchString(v.Secret.SecretName) {
					t.Errorf("%s: Secret %q is neither in the build nor a documented credentials Secret", where, v.Secret.SecretName)
				}
			case v.Projected != nil:
				for _, s := range v.Projected.Sources {
					if s.ConfigMap != nil {
						cmKeys(where, s.ConfigMap.Name, s.ConfigMap.Items)
					}
				}
			}
		}
		for _, c := range w.tmpl.Spec.Containers {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
					cmKeys(w.obj.String()+" env "+e.Name, e.ValueFrom.ConfigMapKeyRef.Name, []corev1.KeyToPath{{Key: e.ValueFrom.ConfigMapKeyRef.Key}})
				}
			}
		}
	}

	// The library: each file is in one ConfigMap, byte for byte, and
	// reaches the registry's tree at its path under library/.
	reg := b.get("Deployment", "skillbus-registry")
	if reg == nil {
		t.Fatal("no skillbus-registry Deployment")
	}
	tree := map[string]string{} // path in the registry's tree -> content
	for _, v := range reg.Typed.(*appsv1.Deployment).Spec.Template.Spec.Volumes {
		if v.Name != "library" || v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ConfigMap == nil {
				continue
			}
			cm := b.get("ConfigMap", s.ConfigMap.Name)
			if cm == nil {
				continue
			}
			data := cm.Typed.(*corev1.ConfigMap).Data
			if len(s.ConfigMap.Items) == 0 {
				for k, d := range data {
					tree[k] = d
				}
			}
			for _, it := range s.ConfigMap.Items {
				tree[it.Path] = data[it.Key]
			}
		}
	}
	want := map[string]string{}
	err := filepath.WalkDir("base/library", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("base/library", p)
		rel = filepath.ToSlash(rel)
		rel = strings.TrimPrefix(rel, "sequences/") // sequences sit at the top of the tree
		want[rel] = string(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, d := range want {
		got, ok := tree[p]
		switch {
		case !ok:
			t.Errorf("base/library: %s does not reach the registry: list it in base/kustomization.yaml's configMapGenerator (and, for a skill, in the items of registry.yaml's library volume)", p)
		case got != d:
			t.Errorf("base/library: %s reaches the registry with other content", p)
		}
	}
	for p := range tree {
		if _, ok := want[p]; !ok {
			t.Errorf("the registry's tree has %s, which is not a file of base/library", p)
		}
	}
}

// servedBy returns the workloads whose pods a label selector picks.
func servedBy(b *built, sel map[string]string) []workload {
	var out []workload
	for _, w := range b.workloads() {
		if matches(sel, w.tmpl.Labels) {
			out = append(out, w)
		}
	}
	return out
}

func checkServices(t *testing.T, b *built) {
	for _, o := range b.find("Service") {
		svc := o.Typed.(*corev1.Service)
		ws := servedBy(b, svc.Spec.Selector)
		if len(ws) == 0 {
			t.Errorf("%s: selector %v matches no pods", o, svc.Spec.Selector)
			continue
		}
		for _, p := range svc.Spec.Ports {
			found := false
			for _, c := range ws[0].tmpl.Spec.Containers {
				if _, ok := containerPort(c, p.TargetPort); ok {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: targetPort %s of port %s is not declared by %s", o, p.TargetPort.String(), p.Name, ws[0].obj)
			}
		}
	}
}

// checkDisruptionBudgets: every workload that runs (or may be scaled to)
// more than one replica has exactly one PodDisruptionBudget, and every
// budget covers exactly one workload.
func checkDisruptionBudgets(t *testing.T, b *built) {
	pdbs := b.find("PodDisruptionBudget")
	for _, w := range b.workloads() {
		multi := w.replicas == nil || *w.replicas > 1 // nil: an autoscaler owns it
		var covering []string
		for _, p := range pdbs {
			if matches(p.Typed.(*policyv1.PodDisruptionBudget).Spec.Selector.MatchLabels, w.tmpl.Labels) {
				covering = append(covering, p.Name)
			}
		}
		if multi && len(covering) == 0 {
			t.Errorf("%s: %v replicas and no PodDisruptionBudget", w.obj, w.replicas)
		}
		if len(covering) > 1 {
			t.Errorf("%s: covered by several PodDisruptionBudgets %v", w.obj, covering)
		}
	}
	for _, p := range pdbs {
		pdb := p.Typed.(*policyv1.PodDisruptionBudget)
		if n := len(servedBy(b, pdb.Spec.Selector.MatchLabels)); n != 1 {
			t.Errorf("%s: selects %d workloads, want 1", p, n)
		}
		if pdb.Spec.MinAvailable != nil {
			t.Errorf("%s: use maxUnavailable: a minAvailable budget blocks node drains at one replica", p)
		}
	}
}

// checkNetworkPolicies: every skillbus pod is selected; ingress only on a
// named port the pods declare; egress only to NATS (a pod of the build
// that serves that port) and DNS.
func checkNetworkPolicies(t *testing.T, b *built) {
	nps := b.find("NetworkPolicy")
	for _, w := range b.workloads() {
		if !isSkillbus(w) {
			continue
		}
		n := 0
		for _, o := range nps {
			if matches(o.Typed.(*networkingv1.NetworkPolicy).Spec.PodSelector.MatchLabels, w.tmpl.Labels) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no NetworkPolicy selects its pods", w.obj)
		}
	}
	for _, o := range nps {
		np := o.Typed.(*networkingv1.NetworkPolicy)
		if !reflect.DeepEqual(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
			t.Errorf("%s: policyTypes %v, want both Ingress and Egress", o, np.Spec.PolicyTypes)
		}
		pods := servedBy(b, np.Spec.PodSelector.MatchLabels)
		for _, r := range np.Spec.Ingress {
			if len(r.Ports) == 0 {
				t.Errorf("%s: an ingress rule without ports opens every port", o)
			}
			for _, p := range r.Ports {
				for _, w := range pods {
					if _, ok := containerPort(w.tmpl.Spec.Containers[0], *p.Port); !ok {
						t.Errorf("%s: ingress port %s is not declared by %s", o, p.Port.String(), w.obj)
					}
				}
			}
		}
		for _, r := range np.Spec.Egress {
			if len(r.To) == 0 || len(r.Ports) == 0 {
				t.Errorf("%s: an egress rule without peers or ports allows everything", o)
				continue
			}
			for _, p := range r.Ports {
				switch p.Port.IntValue() {
				case 53: // DNS
					if r.To[0].PodSelector == nil || r.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" {
						t.Errorf("%s: port 53 open to %v, want kube-dns only", o, r.To)
					}
				case 4222:
					if r.To[0].PodSelector == nil || r.To[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "nats" {
						t.Errorf("%s: port 4222 open to %v, want the NATS pods (app.kubernetes.io/name=nats) only", o, r.To)
						continue
					}
					ws := servedBy(b, r.To[0].PodSelector.MatchLabels)
					if len(ws) == 0 && b.hasNATS() {
						t.Errorf("%s: egress to %v:4222 selects no pod of the build", o, r.To[0].PodSelector.MatchLabels)
					}
					for _, w := range ws {
						if _, ok := containerPort(w.tmpl.Spec.Containers[0], intstr.FromInt32(4222)); !ok {
							t.Errorf("%s: egress to %s, which does not serve 4222", o, w.obj)
						}
					}
				default:
					t.Errorf("%s: egress port %s: only NATS (4222) and DNS (53) are expected", o, p.Port.String())
				}
			}
		}
	}
}

func checkAutoscalers(t *testing.T, b *built) {
	for _, o := range b.find("HorizontalPodAutoscaler") {
		h := o.Typed.(*autoscalingv2.HorizontalPodAutoscaler)
		d := b.get(h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
		if d == nil {
			t.Errorf("%s: target %s/%s is not in the build", o, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
			continue
		}
		if d.Typed.(*appsv1.Deployment).Spec.Replicas != nil {
			t.Errorf("%s: %s sets replicas, which every kubectl apply would reset", o, d)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
			t.Errorf("%s: minReplicas below 2", o)
		}
	}
	for _, o := range b.find("ScaledObject") {
		so := o.Typed.(*scaledObject)
		d := b.get("Deployment", so.Spec.ScaleTargetRef.Name)
		if d == nil {
			t.Errorf("%s: target %q is not in the build", o, so.Spec.ScaleTargetRef.Name)
			continue
		}
		if d.Typed.(*appsv1.Deployment).Spec.Replicas != nil {
			t.Errorf("%s: %s sets replicas, which every kubectl apply would reset", o, d)
		}
		if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount != 1 {
			t.Errorf("%s: minReplicaCount must be 1 (schedules and boot runs need a worker)", o)
		}
		if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Type != "nats-jetstream" {
			t.Fatalf("%s: want one nats-jetstream trigger, got %+v", o, so.Spec.Triggers)
		}
		md := so.Spec.Triggers[0].Metadata
		if md["stream"] != "SEQ_RUNS" || md["consumer"] != "seqworker" {
			t.Errorf("%s: trigger on %s/%s, want the SEQ_RUNS consumer seqworker", o, md["stream"], md["consumer"])
		}
		// The monitoring endpoint must be a Service of the build, in the
		// namespace of the build, on a port the NATS pods serve as
		// "monitor".
		host, port, _ := strings.Cut(md["natsServerMonitoringEndpoint"], ":")
		parts := strings.Split(host, ".")
		svc := b.get("Service", parts[0])
		if svc == nil && !b.hasNATS() {
			continue // NATS from the Helm chart: its headless Service has the same name and monitor port
		}
		if svc == nil {
			t.Errorf("%s: monitoring endpoint %q: no Service %q in the build", o, md["natsServerMonitoringEndpoint"], parts[0])
			continue
		}
		if len(parts) > 1 && parts[1] != svc.Namespace {
			t.Errorf("%s: monitoring endpoint in namespace %q, the Service is in %q", o, parts[1], svc.Namespace)
		}
		ok := false
		for _, p := range svc.Typed.(*corev1.Service).Spec.Ports {
			if strconv.Itoa(int(p.Port)) == port && p.TargetPort.StrVal == "monitor" {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: %s has no port %s to the NATS monitor port", o, svc, port)
		}
	}
}

func checkPodMonitors(t *testing.T, b *built) {
	for _, o := range b.find("PodMonitor") {
		pm := o.Typed.(*podMonitor)
		ws := servedBy(b, pm.Spec.Selector.MatchLabels)
		if len(ws) == 0 {
			t.Errorf("%s: selects no pods", o)
		}
		for _, w := range ws {
			for _, ep := range pm.Spec.PodMetricsEndpoints {
				if _, ok := containerPort(w.tmpl.Spec.Containers[0], intstr.FromString(ep.Port)); !ok {
					t.Errorf("%s: port %q is not declared by %s", o, ep.Port, w.obj)
				}
			}
		}
	}
}

// TestOverlayShapes checks what each overlay is for: dev has one replica
// of everything; prod three NATS nodes, three seqworkers and every stream
// and bucket at three replicas.
func TestOverlayShapes(t *testing.T) {
	dev := buildByName(t, "overlays/dev")
	for _, w := range dev.workloads() {
		if w.replicas == nil || *w.replicas != 1 {
			t.Errorf("dev: %s has %v replicas, want 1", w.obj, w.replicas)
		}
	}
	prod := buildByName(t, "overlays/prod")
	ss := prod.get("StatefulSet", "nats")
	if ss == nil {
		t.Fatal("prod: no nats StatefulSet")
	}
	sts := ss.Typed.(*appsv1.StatefulSet)
	if *sts.Spec.Replicas != 3 {
		t.Errorf("prod: nats has %d replicas, want 3", *sts.Spec.Replicas)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.Template.Spec.TopologySpreadConstraints == nil {
		t.Errorf("prod: nats needs a PVC per node and a topology spread across hosts")
	}
	// The routes name each pod through the headless Service.
	conf, ok := mountedFile(prod, workload{obj: ss, tmpl: &sts.Spec.Template}, sts.Spec.Template.Spec.Containers[0], "/etc/nats-config/nats.conf")
	if !ok {
		t.Fatal("prod: no nats.conf")
	}
	for i := range 3 {
		route := "nats://nats-" + strconv.Itoa(i) + "." + sts.Spec.ServiceName + ":6222"
		if !strings.Contains(conf, route) {
			t.Errorf("prod: nats.conf has no route %s", route)
		}
	}
	if hs := prod.get("Service", sts.Spec.ServiceName); hs == nil || hs.Typed.(*corev1.Service).Spec.ClusterIP != "None" || !hs.Typed.(*corev1.Service).Spec.PublishNotReadyAddresses {
		t.Errorf("prod: %s must be a headless Service publishing not-ready pods (routes form before readiness)", sts.Spec.ServiceName)
	}
	if w := prod.get("Deployment", "skillbus-seqworker"); w == nil || *w.Typed.(*appsv1.Deployment).Spec.Replicas != 3 {
		t.Errorf("prod: want 3 seqworkers")
	}
	for _, name := range []string{"skillbus-registry", "skillbus-seqworker", "skillbus-skillface"} {
		d := prod.get("Deployment", name).Typed.(*appsv1.Deployment)
		if v := envValue(d.Spec.Template.Spec.Containers[0], "SKILLBUS_REPLICAS"); v != "3" {
			t.Errorf("prod: %s: SKILLBUS_REPLICAS = %q, want 3 (every stream and bucket at 3 replicas)", name, v)
		}
	}
	if len(prod.find("HorizontalPodAutoscaler")) != 1 {
		t.Errorf("prod: want the skillface HorizontalPodAutoscaler")
	}
	creds := buildByName(t, "overlays/prod+components/nats-creds")
	for _, role := range []string{"registry", "seqworker", "skillface", "tools"} {
		d := creds.get("Deployment", "skillbus-"+role).Typed.(*appsv1.Deployment)
		c := d.Spec.Template.Spec.Containers[0]
		if v := envValue(c, "NATS_CREDS"); v != "/etc/skillbus/nats/nats.creds" {
			t.Errorf("nats-creds: %s: NATS_CREDS = %q", role, v)
		}
		found := false
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil && v.Secret.SecretName == "skillbus-"+role+"-creds" {
				found = true
			}
		}
		if !found {
			t.Errorf("nats-creds: %s does not mount Secret skillbus-%s-creds", role, role)
		}
	}
}

// TestNATSAuthComponent checks components/nats-auth on both NATS
// kustomizations: each server reads nats-auth.conf, which includes the
// overlay's nats.conf and the Secret skillbus-nats-auth mounted where the
// include points (docs/security.md, Kubernetes). internal/auth's tests
// parse the same files with nats-server.
func TestNATSAuthComponent(t *testing.T) {
	for _, name := range []string{"overlays/prod+components/nats-auth+components/nats-creds", "overlays/dev+components/nats-auth+components/nats-creds"} {
		b := buildByName(t, name)
		o := b.get("StatefulSet", "nats")
		if o == nil {
			t.Fatalf("%s: no StatefulSet nats", name)
		}
		sts := o.Typed.(*appsv1.StatefulSet)
		w := workload{o, sts.Spec.Replicas, sts.Spec.Selector.MatchLabels, &sts.Spec.Template}
		c := sts.Spec.Template.Spec.Containers[0]
		if strings.Join(c.Args, " ") != "--config /etc/nats-config/nats-auth.conf" {
			t.Errorf("%s: nats args %q; want --config /etc/nats-config/nats-auth.conf", name, c.Args)
		}
		conf, ok := mountedFile(b, w, c, "/etc/nats-config/nats-auth.conf")
		if !ok || !strings.Contains(conf, "include ./nats.conf") || !strings.Contains(conf, "include ../nats-auth/auth.conf") {
			t.Errorf("%s: /etc/nats-config/nats-auth.conf = %q; want the includes of nats.conf and ../nats-auth/auth.conf", name, conf)
		}
		if _, ok := mountedFile(b, w, c, "/etc/nats-config/nats.conf"); !ok {
			t.Errorf("%s: /etc/nats-config/nats.conf is no longer mounted", name)
		}
		found := false
		for _, m := range c.VolumeMounts {
			for _, v := range sts.Spec.Template.Spec.Volumes {
				if v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "skillbus-nats-auth" && m.MountPath == "/etc/nats-auth" {
					for _, it := range v.Secret.Items {
						found = found || (it.Key == "auth.conf" && it.Path == "auth.conf")
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: the Secret skillbus-nats-auth (key auth.conf) is not mounted at /etc/nats-auth", name)
		}
	}
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// TestHelmValues checks our values for the official NATS Helm chart: a
// 3-node JetStream cluster on file-store PVCs, spread across hosts, with
// the same nats-server image as our own StatefulSet.
func TestHelmValues(t *testing.T) {
	data, err := os.ReadFile("helm/nats-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config struct {
			Cluster struct {
				Enabled  bool `json:"enabled"`
				Replicas int  `json:"replicas"`
			} `json:"cluster"`
			JetStream struct {
				Enabled   bool `json:"enabled"`
				FileStore struct {
					Enabled bool   `json:"enabled"`
					MaxSize string `json:"maxSize"`
					PVC     struct {
						Enabled bool   `json:"enabled"`
						Size    string `json:"size"`
					} `json:"pvc"`
				} `json:"fileStore"`
				MemoryStore struct {
					Enabled bool   `json:"enabled"`
					MaxSize string `json:"maxSize"`
				} `json:"memoryStore"`
			} `json:"jetstream"`
			Monitor struct {
				Enabled bool `json:"enabled"`
			} `json:"monitor"`
			Merge struct {
				PingInterval string `json:"ping_interval"`
				PingMax      int    `json:"ping_max"`
			} `json:"merge"`
		} `json:"config"`
		Container struct {
			Image struct {
				Repository string `json:"repository"`
				Tag        string `json:"tag"`
			} `json:"image"`
			Resources corev1.ResourceRequirements `json:"resources"`
		} `json:"container"`
		PodTemplate struct {
			TopologySpreadConstraints map[string]struct {
				MaxSkew           int    `json:"maxSkew"`
				WhenUnsatisfiable string `json:"whenUnsatisfiable"`
			} `json:"topologySpreadConstraints"`
		} `json:"podTemplate"`
		PodDisruptionBudget struct {
			Enabled bool `json:"enabled"`
		} `json:"podDisruptionBudget"`
		NatsBox struct {
			Enabled bool `json:"enabled"`
		} `json:"natsBox"`
	}
	if err := yaml.UnmarshalStrict(data, &v); err != nil {
		t.Fatalf("helm/nats-values.yaml: %v", err)
	}
	c := v.Config
	if !c.Cluster.Enabled || c.Cluster.Replicas != 3 {
		t.Errorf("cluster must be enabled with 3 replicas: %+v", c.Cluster)
	}
	if !c.JetStream.Enabled || !c.JetStream.FileStore.Enabled || !c.JetStream.FileStore.PVC.Enabled || c.JetStream.FileStore.PVC.Size == "" {
		t.Errorf("JetStream must keep its file store on a PVC: %+v", c.JetStream)
	}
	if !c.Monitor.Enabled {
		t.Errorf("the monitor port is needed by the probes and KEDA")
	}
	// Pings every 2 s, 2 unanswered drop the link: a node cut off the
	// network is left in 4-6 s (RELIABILITY.md), as in our StatefulSet.
	conf, err := os.ReadFile("nats/cluster/nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	if c.Merge.PingInterval != "2s" || c.Merge.PingMax != 2 {
		t.Errorf("config.merge ping_interval %q, ping_max %d; want \"2s\" and 2", c.Merge.PingInterval, c.Merge.PingMax)
	}
	for _, line := range []string{`ping_interval: "2s"`, "ping_max: 2"} {
		if !strings.Contains(string(conf), "\n"+line+"\n") {
			t.Errorf("nats/cluster/nats.conf has no line %s; want the chart's pings in our StatefulSet too", line)
		}
	}
	if s, ok := v.PodTemplate.TopologySpreadConstraints["kubernetes.io/hostname"]; !ok || s.MaxSkew != 1 || s.WhenUnsatisfiable != "DoNotSchedule" {
		t.Errorf("want one node per host (topologySpreadConstraints on kubernetes.io/hostname, maxSkew 1, DoNotSchedule): %+v", v.PodTemplate.TopologySpreadConstraints)
	}
	if !v.PodDisruptionBudget.Enabled {
		t.Errorf("the chart's PodDisruptionBudget must stay enabled")
	}
	prod := buildByName(t, "overlays/prod")
	img := prod.get("StatefulSet", "nats").Typed.(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0].Image
	if want := v.Container.Image.Repository + ":" + v.Container.Image.Tag; want != img {
		t.Errorf("the chart runs %s, our StatefulSet %s: keep one nats-server version", want, img)
	}
}

// TestKubectlKustomize compares our in-process builds with `kubectl
// kustomize` of the same directories, object by object.
func TestKubectlKustomize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found: the in-process kustomize builds are not compared with `kubectl kustomize` (install kubectl to compare)")
	}
	for _, dir := range []string{"overlays/dev", "overlays/prod", "overlays/prod-services"} {
		t.Run(strings.ReplaceAll(dir, "/", "_"), func(t *testing.T) {
			out, err := exec.Command(kubectl, "kustomize", dir).Output()
			if err != nil {
				msg := ""
				if ee, ok := err.(*exec.ExitError); ok {
					msg = string(ee.Stderr)
				}
				t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, msg)
			}
			theirs := map[string]any{}
			for _, doc := range strings.Split(string(out), "\n---\n") {
				var m map[string]any
				if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
					t.Fatalf("kubectl kustomize %s: %v", dir, err)
				}
				if m == nil {
					continue
				}
				md, _ := m["metadata"].(map[string]any)
				theirs[m["kind"].(string)+"/"+md["name"].(string)] = normalize(t, m)
			}
			ours := buildByName(t, dir)
			if len(ours.objects) != len(theirs) {
				t.Errorf("kubectl kustomize %s: %d objects, ours %d", dir, len(theirs), len(ours.objects))
			}
			for _, o := range ours.objects {
				th, ok := theirs[o.String()]
				if !ok {
					t.Errorf("%s: kubectl kustomize has no %s", dir, o)
					continue
				}
				if mine := normalize(t, o.Raw); !reflect.DeepEqual(mine, th) {
					t.Errorf("%s: %s differs:\nkubectl: %s\nours:    %s", dir, o, jsonIndent(th), jsonIndent(mine))
				}
			}
		})
	}
}
