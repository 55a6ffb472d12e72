package k8s

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestProdAsProcesses starts every container of the built prod overlay as a
// process on this machine — the binary its command names (built from the
// main module), exactly its args and env, its volumes written to a
// temporary directory the way the kubelet lays them out — with the NATS
// StatefulSet's three pods as three nats-server processes clustered on
// loopback. It then waits for every readiness probe, checks that every
// stream and bucket has 3 replicas, runs the smoke sequence of
// base/library through the stack with `skillbus run`, scrapes the
// seqworkers' /metrics for the run, and stops each process with SIGTERM
// within its terminationGracePeriodSeconds.
//
// What is mapped, and nothing else: a path under a volume's mountPath to
// that volume's directory (in args, env values and the mounted
// configuration files); a declared container port to a free loopback port
// (a value ":PORT" in args or env; nats-server's ports by its flags); a
// Service URL (nats://nats:4222) to the addresses of the pods behind it.
func TestProdAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the manifests-as-processes test builds the binaries and starts a NATS cluster")
	}
	start := time.Now()
	prod := buildByName(t, "overlays/prod")
	bins := buildBinaries(t)
	root := t.TempDir()

	cluster := newCluster(t, prod, root, bins)

	// The NATS StatefulSet's pods first: every service needs the bus.
	var natsPods []*pod
	for _, w := range prod.workloads() {
		if !isSkillbus(w) {
			for i := range int(*w.replicas) {
				natsPods = append(natsPods, cluster.addPod(w, i))
			}
		}
	}
	if len(natsPods) != 3 {
		t.Fatalf("prod has %d NATS pods, want 3", len(natsPods))
	}
	for _, p := range natsPods {
		p.start()
	}
	waitReady(t, natsPods, 60*time.Second)
	t.Logf("NATS cluster ready: %s", cluster.serviceURL("nats", 4222))
	for _, p := range natsPods {
		pidFile := p.hostPath("/var/run/nats/nats.pid")
		if _, err := os.Stat(pidFile); err != nil {
			t.Errorf("%s: the pid file the preStop hook signals is not where the hook looks: %v", p.name, err)
		}
	}

	nc, err := nats.Connect(cluster.serviceURL("nats", 4222), nats.Name("deploy-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cluster.nc = nc

	// One pod of each skillbus Deployment, two of the seqworker's: a run
	// whose worker stops must finish (on it, or resumed on the other).
	var svcPods []*pod
	for _, w := range prod.workloads() {
		if isSkillbus(w) {
			svcPods = append(svcPods, cluster.addPod(w, 0))
			if w.obj.Name == "skillbus-seqworker" {
				svcPods = append(svcPods, cluster.addPod(w, 1))
			}
			// Every registry replica the manifest asks for: one holds
			// the lease and writes, the others stand by.
			if w.obj.Name == "skillbus-registry" {
				for i := 1; i < int(*w.replicas); i++ {
					svcPods = append(svcPods, cluster.addPod(w, i))
				}
			}
		}
	}
	for _, p := range svcPods {
		p.checkFlags()
	}
	if missing := cluster.missingHealth(); len(missing) > 0 {
		t.Skipf("manifests-as-processes skipped: %s do not have --health-addr yet (the health endpoints of docs/operations.md), so their readiness probes cannot answer; this test runs as soon as they do", strings.Join(missing, ", "))
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, p := range svcPods {
		p.start()
	}
	// Generous: a service that fails its first start is restarted after
	// 10 s, then 20 s, as the kubelet does.
	waitReady(t, svcPods, 3*time.Minute)

	checkReplicas(t, nc)
	t.Run("registry lease", func(t *testing.T) { checkRegistryLease(t, cluster.replicas("skillbus-registry")) })

	// The tool provider's workspace is the volume the manifest mounts:
	// put a file in it and see the built-in tools find it.
	tools := cluster.pod("skillbus-tools")
	if err := os.WriteFile(tools.hostPath("/var/lib/skillbus/workspace/hello.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runSmoke(t, cluster, bins)
	t.Run("metrics", func(t *testing.T) { checkRunMetric(t, cluster.replicas("skillbus-seqworker")) })
	stoppedFirst := stopWithRunInFlight(t, cluster, bins)

	// SIGTERM, as the kubelet sends it; each must exit 0 within its grace
	// period.
	for _, p := range append(svcPods, natsPods...) {
		if p != stoppedFirst {
			p.stop()
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %12s %12s %9s %13s %6s\n", "pod", "probe 200", "serving", "restarts", "SIGTERM→exit", "grace")
	for _, p := range append(natsPods, svcPods...) {
		fmt.Fprintf(&b, "%-22s %12s %12s %9d %13s %5ds\n", p.name, p.probeAfter.Round(time.Millisecond), p.readyAfter.Round(time.Millisecond), p.restarts, p.stoppedAfter.Round(time.Millisecond), p.grace/time.Second)
		if p.readyAfter-p.probeAfter > time.Second {
			t.Logf("%s: the readiness probe answered 200 %s before the service answered on NATS: /readyz said ready too early", p.name, (p.readyAfter - p.probeAfter).Round(time.Millisecond))
		}
		if p.restarts > 0 {
			t.Logf("%s was restarted %d times before it was ready (a Kubernetes pod would be too); its output:\n%s", p.name, p.restarts, p.logTail())
		}
	}
	t.Logf("prod overlay as processes, %s in all:\n%s", time.Since(start).Round(time.Millisecond), b.String())
}

// imageVersion is the VERSION build argument the test gives the
// Dockerfile's go build; every binary must report it.
const imageVersion = "9.8.7-deploytest"

// buildBinaries builds the binaries of the image with the Dockerfile's own
// go build command (its RUN line, run by sh with the build arguments
// TARGETOS, TARGETARCH and VERSION set, writing to a temporary directory
// instead of /out/), checks that each is statically linked and reports
// VERSION with --version, and builds nats-server (the version the main
// module requires). The source is this repository, or the checkout
// SKILLBUS_DEPLOY_SRC names (to try these manifests against another
// version of the services).
func buildBinaries(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	src := repoRoot
	if s := os.Getenv("SKILLBUS_DEPLOY_SRC"); s != "" {
		src = s
		t.Logf("building the binaries from %s (SKILLBUS_DEPLOY_SRC)", src)
	}
	run := dockerfileGoBuild(t)
	if !strings.Contains(run, " /out/") {
		t.Fatalf("the Dockerfile's go build does not write to /out/: %s", run)
	}
	script := strings.ReplaceAll(run, " /out/", " "+dir+string(os.PathSeparator))
	t0 := time.Now()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH, "VERSION="+imageVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's go build (%s): %v\n%s", script, err, out)
	}
	cmd = exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "github.com/nats-io/nats-server/v2")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build nats-server: %v\n%s", err, out)
	}
	t.Logf("built the binaries in %s", time.Since(t0).Round(time.Millisecond))
	bins := map[string]string{}
	for _, n := range []string{"registry", "seqworker", "skillface", "skillbus", "nats-server"} {
		bins[n] = filepath.Join(dir, n)
		if n == "nats-server" {
			continue
		}
		f, err := elf.Open(bins[n])
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s is dynamically linked (it has a program interpreter): it cannot run on distroless static", n)
			}
		}
		f.Close()
		out, _ := exec.Command(bins[n], "--version").CombinedOutput()
		if !strings.Contains(string(out), imageVersion) {
			t.Errorf("%s --version says %q; the Dockerfile's build was given VERSION=%s", n, strings.TrimSpace(string(out)), imageVersion)
		}
	}
	return bins
}

// cluster is the set of pods started for one build.
type cluster struct {
	t    *testing.T
	b    *built
	root string
	bins map[string]string
	pods []*pod
	// ports maps "pod/containerPort" to the loopback port standing in.
	ports map[string]int
	// noHealth lists the pods whose binary has no --health-addr.
	noHealth []string
	// nc is a client of the local NATS cluster, once it runs.
	nc *nats.Conn
}

// microService names the NATS micro service each Deployment's process
// serves (`nats micro ls`): a ready pod must answer its ping.
var microService = map[string]string{
	"skillbus-registry":  "skillbus-registry",
	"skillbus-seqworker": "skillbus-seq",
	"skillbus-skillface": "skillbus-skillface",
	"skillbus-tools":     "skillbus-builtin",
}

func newCluster(t *testing.T, b *built, root string, bins map[string]string) *cluster {
	c := &cluster{t: t, b: b, root: root, bins: bins, ports: map[string]int{}}
	t.Cleanup(func() {
		for _, p := range c.pods {
			p.kill()
		}
	})
	return c
}

func (c *cluster) pod(deployment string) *pod {
	for _, p := range c.pods {
		if p.w.obj.Name == deployment && p.cmd != nil {
			return p
		}
	}
	c.t.Fatalf("no pod of %s", deployment)
	return nil
}

// replicas returns the running pods of a deployment.
func (c *cluster) replicas(deployment string) []*pod {
	var out []*pod
	for _, p := range c.pods {
		if p.w.obj.Name == deployment && p.cmd != nil {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		c.t.Fatalf("no pod of %s", deployment)
	}
	return out
}

// pod is one container of one pod, run as a process.
type pod struct {
	c       *cluster
	t       *testing.T
	w       workload
	name    string // pod name: nats-0, skillbus-seqworker-0
	ordinal int
	ctr     corev1.Container
	dir     string
	mounts  map[string]string // mountPath -> host directory
	grace   time.Duration

	argv []string
	env  []string
	log  *bytes.Buffer

	mu       sync.Mutex // guards the fields below and log
	cmd      *exec.Cmd  // the current run of the container
	exited   chan struct{}
	exitErr  error
	restarts int  // runs restarted after an exit, as the kubelet does
	stopping bool // SIGTERM sent: no more restarts

	started      time.Time
	probeAfter   time.Duration // first 200 of the readiness probe
	readyAfter   time.Duration // ... and its service answers on NATS
	stoppedAfter time.Duration
}

// addPod lays out the volumes of workload w's pod number i and works out
// its process's argv and environment.
func (c *cluster) addPod(w workload, i int) *pod {
	t := c.t
	name := fmt.Sprintf("%s-%d", w.obj.Name, i)
	if len(w.tmpl.Spec.Containers) != 1 {
		t.Fatalf("%s: %d containers; this test runs pods of one container", w.obj, len(w.tmpl.Spec.Containers))
	}
	p := &pod{c: c, t: t, w: w, name: name, ordinal: i, ctr: w.tmpl.Spec.Containers[0], dir: filepath.Join(c.root, name),
		mounts: map[string]string{}, log: &bytes.Buffer{}}
	p.grace = time.Duration(*w.tmpl.Spec.TerminationGracePeriodSeconds) * time.Second
	for _, cp := range p.ctr.Ports {
		c.ports[name+"/"+strconv.Itoa(int(cp.ContainerPort))] = freePort(t)
	}
	c.pods = append(c.pods, p)
	p.layVolumes()
	p.resolve()
	return p
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// layVolumes writes each volume the container mounts: emptyDir and claim
// templates as empty directories; ConfigMap, Secret and projected volumes
// as the kubelet writes them (files in a timestamped directory, "..data"
// linking to it, each top-level entry a link through "..data").
func (p *pod) layVolumes() {
	t := p.t
	vols := map[string]corev1.Volume{}
	for _, v := range p.w.tmpl.Spec.Volumes {
		vols[v.Name] = v
	}
	for _, m := range p.ctr.VolumeMounts {
		host := filepath.Join(p.dir, "volumes", m.Name)
		p.mounts[m.MountPath] = host
		v, ok := vols[m.Name]
		if !ok { // a volumeClaimTemplate: the PVC
			mkdir(t, host)
			continue
		}
		files := map[string]string{}
		switch {
		case v.EmptyDir != nil:
			mkdir(t, host)
			continue
		case v.ConfigMap != nil:
			p.project(files, "ConfigMap", v.ConfigMap.Name, v.ConfigMap.Items)
		case v.Secret != nil:
			p.project(files, "Secret", v.Secret.SecretName, v.Secret.Items)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				switch {
				case s.ConfigMap != nil:
					p.project(files, "ConfigMap", s.ConfigMap.Name, s.ConfigMap.Items)
				case s.Secret != nil:
					p.project(files, "Secret", s.Secret.Name, s.Secret.Items)
				default:
					t.Fatalf("%s: projected source %+v is not emulated", p.name, s)
				}
			}
		default:
			t.Fatalf("%s: volume %q: this kind of volume is not emulated", p.name, m.Name)
		}
		atomicWrite(t, host, files)
	}
	// Mounted configuration files name paths inside the container: map
	// them like the container's file system would resolve them.
	for _, host := range p.mounts {
		_ = filepath.WalkDir(host, func(f string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(f, "..data") || d.Type()&os.ModeSymlink != 0 {
				return err
			}
			if filepath.Ext(f) == ".conf" {
				data, _ := os.ReadFile(f)
				if mapped := p.mapPaths(string(data)); mapped != string(data) {
					if err := os.WriteFile(f, []byte(mapped), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			return nil
		})
	}
}

func mkdir(t *testing.T, d string) {
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

// project adds the keys of a ConfigMap or Secret of the build to files
// (path -> content): all keys, or only items at their paths.
func (p *pod) project(files map[string]string, kind, name string, items []corev1.KeyToPath) {
	o := p.c.b.get(kind, name)
	if o == nil {
		p.t.Fatalf("%s: %s %q is not in the build", p.name, kind, name)
	}
	data := map[string]string{}
	switch v := o.Typed.(type) {
	case *corev1.ConfigMap:
		data = v.Data
	case *corev1.Secret:
		for k, b := range v.Data {
			data[k] = string(b)
		}
		for k, s := range v.StringData {
			data[k] = s
		}
	}
	if len(items) == 0 {
		for k, d := range data {
			files[k] = d
		}
		return
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			p.t.Fatalf("%s: %s %q has no key %q", p.name, kind, name, it.Key)
		}
		files[it.Path] = d
	}
}

// atomicWrite lays files out as the kubelet's atomic writer does: the
// files in dir/..<timestamp>/, dir/..data a link to it, and each top-level
// name in dir a link to ..data/<name>.
func atomicWrite(t *testing.T, dir string, files map[string]string) {
	ts := "..2026_01_01_00_00_00.000000001"
	for rel, content := range files {
		f := filepath.Join(dir, ts, filepath.FromSlash(rel))
		mkdir(t, filepath.Dir(f))
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mkdir(t, filepath.Join(dir, ts))
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	top := map[string]bool{}
	for rel := range files {
		first, _, _ := strings.Cut(rel, "/")
		top[first] = true
	}
	for name := range top {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// hostPath maps a path inside the container to the host path standing in
// for it (the longest mountPath that contains it).
func (p *pod) hostPath(ctrPath string) string {
	best := ""
	for mp := range p.mounts {
		if (ctrPath == mp || strings.HasPrefix(ctrPath, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best) {
			best = mp
		}
	}
	if best == "" {
		return ""
	}
	return p.mounts[best] + strings.TrimPrefix(ctrPath, best)
}

var absPath = regexp.MustCompile(`/[A-Za-z0-9._\-]+(/[A-Za-z0-9._\-]*)*`)

// mapPaths replaces every absolute path under a mount in s by its host path.
func (p *pod) mapPaths(s string) string {
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		if h := p.hostPath(m); h != "" {
			return h
		}
		return m
	})
}

var portValue = regexp.MustCompile(`^(.*?)(0\.0\.0\.0|\[::\])?:(\d+)$`)
var serviceURL = regexp.MustCompile(`^([a-z]+)://([a-z0-9\-]+)(\.[a-z0-9.\-]+)?:(\d+)$`)

// mapValue maps one arg or env value: container paths, a listen address
// on a declared port, a Service URL.
func (p *pod) mapValue(v string) string {
	if m := serviceURL.FindStringSubmatch(v); m != nil {
		port, _ := strconv.Atoi(m[4])
		if u := p.c.serviceURLScheme(m[1], m[2], port); u != "" {
			return u
		}
	}
	if m := portValue.FindStringSubmatch(v); m != nil && (m[1] == "" || strings.HasSuffix(m[1], "=")) {
		if lp, ok := p.c.ports[p.name+"/"+m[3]]; ok {
			return m[1] + "127.0.0.1:" + strconv.Itoa(lp)
		}
	}
	return p.mapPaths(v)
}

// serviceURL returns the client URLs of the pods behind a Service port,
// comma separated, or "" when name is not a Service of the build.
func (c *cluster) serviceURL(name string, port int) string {
	return c.serviceURLScheme("nats", name, port)
}

func (c *cluster) serviceURLScheme(scheme, name string, port int) string {
	o := c.b.get("Service", name)
	if o == nil {
		return ""
	}
	svc := o.Typed.(*corev1.Service)
	var urls []string
	for _, sp := range svc.Spec.Ports {
		if int(sp.Port) != port {
			continue
		}
		for _, w := range servedBy(c.b, svc.Spec.Selector) {
			cp, ok := containerPort(w.tmpl.Spec.Containers[0], sp.TargetPort)
			if !ok {
				continue
			}
			n := 1
			if w.replicas != nil {
				n = int(*w.replicas)
			}
			for i := range n {
				if lp, ok := c.ports[fmt.Sprintf("%s-%d/%d", w.obj.Name, i, cp)]; ok {
					urls = append(urls, fmt.Sprintf("%s://127.0.0.1:%d", scheme, lp))
				}
			}
		}
	}
	sort.Strings(urls)
	return strings.Join(urls, ",")
}

// k8sVarRef is $(NAME) in command, args and env values; $$ escapes.
var k8sVarRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

func expand(s string, vars map[string]string) string {
	return k8sVarRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		name := m[2 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		return m
	})
}

// resolve works out the process's argv and environment from the
// container: env (value, ConfigMap and Secret keys, the downward API,
// resource limits) in order with $(VAR) expansion, then command and args.
func (p *pod) resolve() {
	t := p.t
	vars := map[string]string{}
	var env []string
	set := func(k, v string) {
		vars[k] = v
		env = append(env, k+"="+v)
	}
	for _, ef := range p.ctr.EnvFrom {
		t.Fatalf("%s: envFrom %+v is not emulated", p.name, ef)
	}
	ns := p.w.obj.Namespace
	for _, e := range p.ctr.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, p.mapValue(expand(e.Value, vars)))
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				set(e.Name, p.name)
			case "metadata.namespace":
				set(e.Name, ns)
			default:
				t.Fatalf("%s: env %s: fieldRef %s is not emulated", p.name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			r := e.ValueFrom.ResourceFieldRef
			// The kubelet gives the limit in units of the divisor, rounded
			// up (default divisor: 1 byte, 1 core).
			var q resource.Quantity
			divMilli := int64(1000)
			switch r.Resource {
			case "limits.memory":
				q = p.ctr.Resources.Limits[corev1.ResourceMemory]
			case "limits.cpu":
				q = p.ctr.Resources.Limits[corev1.ResourceCPU]
			default:
				t.Fatalf("%s: env %s: resourceFieldRef %s is not emulated", p.name, e.Name, r.Resource)
			}
			if !r.Divisor.IsZero() {
				divMilli = r.Divisor.MilliValue()
			}
			set(e.Name, strconv.FormatInt((q.MilliValue()+divMilli-1)/divMilli, 10))
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			set(e.Name, p.mapValue(p.c.b.get("ConfigMap", ref.Name).Typed.(*corev1.ConfigMap).Data[ref.Key]))
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			o := p.c.b.get("Secret", ref.Name)
			if o == nil {
				t.Fatalf("%s: env %s: Secret %q is not in the build", p.name, e.Name, ref.Name)
			}
			set(e.Name, string(o.Typed.(*corev1.Secret).Data[ref.Key]))
		}
	}
	if len(p.ctr.Command) == 0 {
		t.Fatalf("%s: no command (the image has no ENTRYPOINT)", p.name)
	}
	bin, ok := p.c.bins[path.Base(p.ctr.Command[0])]
	if !ok {
		t.Fatalf("%s: command %q is none of the binaries built (%v)", p.name, p.ctr.Command[0], sortedKeys(p.c.bins))
	}
	argv := []string{bin}
	for _, a := range append(append([]string{}, p.ctr.Command[1:]...), p.ctr.Args...) {
		argv = append(argv, p.mapValue(expand(a, vars)))
	}
	if path.Base(p.ctr.Command[0]) == "nats-server" {
		argv = append(argv, p.natsOverrides()...)
	}
	home := filepath.Join(p.dir, "home")
	mkdir(t, home)
	// The image's environment (distroless: HOME, PATH), then the
	// container's: nothing of this test process's own environment (a
	// NATS_URL in the developer's shell must not leak in).
	base := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"}
	if tmp := p.hostPath("/tmp"); tmp != "" {
		base = append(base, "TMPDIR="+tmp)
	}
	p.argv = argv
	p.env = append(base, env...)
}

// natsOverrides are the nats-server flags standing in for what differs on
// one machine: each node's ports on loopback, and routes to the other
// nodes' loopback cluster ports instead of the headless Service's names.
// Everything else comes from the configuration file of the manifest.
func (p *pod) natsOverrides() []string {
	port := func(name string) int {
		cp, ok := containerPort(p.ctr, intOrName(name))
		if !ok {
			p.t.Fatalf("%s: no container port %q", p.name, name)
		}
		return p.c.ports[fmt.Sprintf("%s/%d", p.name, cp)]
	}
	var routes []string
	n := int(*p.w.replicas)
	cp, _ := containerPort(p.ctr, intOrName("cluster"))
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p.c.ports[fmt.Sprintf("%s-%d/%d", p.w.obj.Name, i, cp)]))
	}
	return []string{"--addr", "127.0.0.1", "--port", strconv.Itoa(port("nats")), "--http_port", strconv.Itoa(port("monitor")),
		"--cluster", fmt.Sprintf("nats://127.0.0.1:%d", port("cluster")), "--routes", strings.Join(routes, ",")}
}

// checkFlags runs the container's command with --help and checks that
// every SKILLBUS_<FLAG> variable and every --flag argument of the manifest
// names a flag the binary has: a flag renamed in code but not in the
// manifest, or a variable nobody reads, fails here.
func (p *pod) checkFlags() {
	var sub []string
	for _, a := range p.argv[1:] {
		if strings.HasPrefix(a, "-") {
			break
		}
		sub = append(sub, a)
	}
	cmd := exec.Command(p.argv[0], append(sub, "--help")...)
	cmd.Env = []string{"HOME=" + p.dir}
	out, _ := cmd.CombinedOutput()
	help := string(out)
	has := func(flag string) bool {
		return regexp.MustCompile(`(?m)(^|[\s,])--?` + regexp.QuoteMeta(flag) + `\b`).MatchString(help)
	}
	if !has("health-addr") {
		p.c.noHealth = append(p.c.noHealth, p.name)
		return
	}
	for _, e := range p.env {
		k, _, _ := strings.Cut(e, "=")
		if f, ok := strings.CutPrefix(k, "SKILLBUS_"); ok {
			flag := strings.ReplaceAll(strings.ToLower(f), "_", "-")
			if !has(flag) {
				p.t.Errorf("%s: the manifest sets %s, but `%s --help` has no --%s", p.name, k, strings.Join(append([]string{path.Base(p.argv[0])}, sub...), " "), flag)
			}
		}
	}
	for _, a := range p.argv[1+len(sub):] {
		if f, ok := strings.CutPrefix(a, "--"); ok {
			f, _, _ = strings.Cut(f, "=")
			if !has(f) {
				p.t.Errorf("%s: the manifest passes --%s, but `%s --help` has no such flag", p.name, f, path.Base(p.argv[0]))
			}
		}
	}
}

func (c *cluster) missingHealth() []string { return c.noHealth }

// start starts the container's process and restarts it whenever it exits
// until stop, as the kubelet does for restartPolicy Always (the only policy
// of Deployments and StatefulSets), after 10 s doubling per restart.
// Restarts are counted and reported.
func (p *pod) start() {
	mkdir(p.t, filepath.Join(p.dir, "work"))
	p.started = time.Now()
	if err := p.run(); err != nil {
		p.t.Fatalf("%s: start %v: %v", p.name, p.argv, err)
	}
}

// run starts one run of the process; a goroutine waits for it and
// schedules the restart.
func (p *pod) run() error {
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Env = p.env
	cmd.Dir = filepath.Join(p.dir, "work")
	w := &lockedWriter{mu: &p.mu, b: p.log}
	cmd.Stdout, cmd.Stderr = w, w
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitErr = err
		stopping := p.stopping
		n := p.restarts
		if !stopping {
			fmt.Fprintf(p.log, "\n[test: %s exited: %v; restarting in %s, as the kubelet would]\n", p.name, err, 10*time.Second<<n)
		}
		p.mu.Unlock()
		close(exited)
		if stopping {
			return
		}
		time.Sleep(10 * time.Second << n)
		p.mu.Lock()
		if p.stopping {
			p.mu.Unlock()
			return
		}
		p.restarts++
		p.mu.Unlock()
		_ = p.run()
	}()
	return nil
}

// current returns the current run's process and its exit channel.
func (p *pod) current() (*exec.Cmd, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd, p.exited
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

// logTail is the end of the process's output, for failure messages.
func (p *pod) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.log.String()
	if len(s) > 3000 {
		s = "…" + s[len(s)-3000:]
	}
	return s
}

// probeURL is the readiness probe's URL on the loopback port standing in
// for its container port.
func (p *pod) probeURL(pr *corev1.Probe) string {
	cp, ok := containerPort(p.ctr, pr.HTTPGet.Port)
	if !ok {
		p.t.Fatalf("%s: probe port %s not declared", p.name, pr.HTTPGet.Port.String())
	}
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.c.ports[fmt.Sprintf("%s/%d", p.name, cp)], pr.HTTPGet.Path)
}

// waitReady waits for every pod's probes at once (each pod's time to
// ready is its own) and fails the test for those not ready in time.
func waitReady(t *testing.T, pods []*pod, limit time.Duration) {
	errs := make([]string, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = p.waitReady(limit)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Error(e)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// waitReady polls the startup, then the readiness probe until it answers
// 200, and checks the liveness probe answers too; it returns what went
// wrong, or "".
func (p *pod) waitReady(limit time.Duration) string {
	deadline := p.started.Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	get := func(u string) int {
		resp, err := client.Get(u)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, pr := range []*corev1.Probe{p.ctr.StartupProbe, p.ctr.ReadinessProbe} {
		u := p.probeURL(pr)
		for get(u) != http.StatusOK {
			if time.Now().After(deadline) {
				return fmt.Sprintf("%s: %s did not answer 200 within %s\n%s", p.name, u, limit, p.logTail())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	p.probeAfter = time.Since(p.started)
	p.readyAfter = p.probeAfter
	// Ready means serving: the pod's micro service answers a ping.
	if svc, ok := microService[p.w.obj.Name]; ok {
		for {
			if _, err := p.c.nc.Request("$SRV.PING."+svc, nil, time.Second); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Sprintf("%s: its readiness probe answered 200 after %s, but %s never answered a ping on NATS within %s\n%s", p.name, p.probeAfter, svc, limit, p.logTail())
			}
			time.Sleep(20 * time.Millisecond)
		}
		p.readyAfter = time.Since(p.started)
	}
	if code := get(p.probeURL(p.ctr.LivenessProbe)); code != http.StatusOK {
		return fmt.Sprintf("%s: liveness probe %s answered %d while ready", p.name, p.probeURL(p.ctr.LivenessProbe), code)
	}
	return ""
}

// stop sends SIGTERM and waits for the exit, which must come within the
// pod's terminationGracePeriodSeconds and be a clean one (status 0).
func (p *pod) stop() {
	t := p.t
	p.mu.Lock()
	p.stopping = true
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	select {
	case <-exited:
		t.Errorf("%s: not running when SIGTERM was due (%v)\n%s", p.name, p.exitErr, p.logTail())
		return
	default:
	}
	t0 := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("%s: SIGTERM: %v", p.name, err)
		return
	}
	select {
	case <-exited:
		p.stoppedAfter = time.Since(t0)
		if p.exitErr != nil {
			t.Errorf("%s: exit after SIGTERM: %v (want status 0)\n%s", p.name, p.exitErr, p.logTail())
		}
	case <-time.After(p.grace):
		t.Errorf("%s: still running %s after SIGTERM, its terminationGracePeriodSeconds: the kubelet would SIGKILL it\n%s", p.name, p.grace, p.logTail())
		p.kill()
	}
}

// kill ends the process at once (test cleanup).
func (p *pod) kill() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	cmd, exited := p.current()
	if cmd == nil || cmd.Process == nil {
		return
	}
	select {
	case <-exited:
	default:
		_ = cmd.Process.Kill()
		<-exited
	}
}

// checkReplicas: every stream and bucket the services provisioned has 3
// replicas (SKILLBUS_REPLICAS of overlays/prod).
func checkReplicas(t *testing.T, nc *nats.Conn) {
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	seen := map[string]int{}
	l := js.ListStreams(ctx)
	for si := range l.Info() {
		seen[si.Config.Name] = si.Config.Replicas
	}
	if err := l.Err(); err != nil {
		t.Fatalf("list streams: %v", err)
	}
	for _, want := range []string{"SEQ_RUNS", "EVENTS", "KV_SKILLS", "KV_SEQUENCES", "KV_RUNS", "KV_SKILLFACE_SESSIONS", "KV_REGISTRY_LEASE"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("stream %s was not provisioned (streams: %v)", want, seen)
		}
	}
	for name, r := range seen {
		if r != 3 {
			t.Errorf("stream %s has %d replicas, want 3 (overlays/prod sets SKILLBUS_REPLICAS=3)", name, r)
		}
	}
	t.Logf("streams and buckets: %v", seen)
}

// runSmoke runs base/library's skillbus-smoke sequence through the stack,
// as an operator would after deploying (docs/deploy.md).
func runSmoke(t *testing.T, c *cluster, bins map[string]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins["skillbus"], "run", "skillbus-smoke", "--arg", "who=deploy-test", "--json")
	cmd.Env = []string{"HOME=" + c.root, "NATS_URL=" + c.serviceURL("nats", 4222)}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	t0 := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("skillbus run skillbus-smoke: %v\nstdout: %s\nstderr: %s\nseqworker: %s", err, out, stderr.String(), c.pod("skillbus-seqworker").logTail())
	}
	var st struct {
		Status string                     `json:"status"`
		Slots  map[string]json.RawMessage `json:"slots"`
		Error  string                     `json:"error"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("skillbus run --json: %v\n%s", err, out)
	}
	var report string
	_ = json.Unmarshal(st.Slots["report"], &report)
	const want = "skillbus smoke for deploy-test: ok, the workspace holds 1 entries"
	if st.Status != "succeeded" || report != want {
		t.Fatalf("smoke run: status %q, report %q, error %q; want succeeded with %q\n%s", st.Status, report, st.Error, want, out)
	}
	t.Logf("smoke run through the deployed stack: %s in %s", st.Status, time.Since(t0).Round(time.Millisecond))
}

// stopWithRunInFlight stops the seqworker holding a run in the middle of
// a group, as a rolling upgrade does: the group calls deploy.hold, a tool
// this test serves, which answers 2 s after the worker got SIGTERM. The
// worker must exit within its grace period and the run must succeed (the
// stopping worker finishes the group, or another replica resumes the run
// from its checkpoint). It returns the pod it stopped.
func stopWithRunInFlight(t *testing.T, c *cluster, bins map[string]string) *pod {
	got := make(chan struct{}, 4)
	release := make(chan struct{})
	calls := 0
	var mu sync.Mutex
	sub, err := c.nc.QueueSubscribe("tool.deploy.hold", "deploy-test", func(m *nats.Msg) {
		mu.Lock()
		calls++
		mu.Unlock()
		got <- struct{}{}
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		_ = m.Respond([]byte(`{"held":true}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	seqFile := filepath.Join(c.root, "deploy-inflight.seq.yaml")
	if err := os.WriteFile(seqFile, []byte(inflightSeq), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bins["skillbus"], "run", seqFile, "--run-id", "deploy-inflight-1", "--json")
	run.Env = []string{"HOME=" + c.root, "NATS_URL=" + c.serviceURL("nats", 4222)}
	var stdout, stderr bytes.Buffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatalf("deploy.hold was never called\n%s", stderr.String())
	}
	// Which worker holds it: RunState.Worker is host-PID-random.
	js, _ := jetstream.New(c.nc)
	kv, err := js.KeyValue(ctx, "RUNS")
	if err != nil {
		t.Fatal(err)
	}
	var holder *pod
	for holder == nil && ctx.Err() == nil {
		if e, err := kv.Get(ctx, "deploy-inflight-1"); err == nil {
			var st struct {
				Worker string `json:"worker"`
			}
			_ = json.Unmarshal(e.Value(), &st)
			for _, p := range c.pods {
				if cmd, _ := p.current(); cmd != nil && cmd.Process != nil && strings.Contains(st.Worker, "-"+strconv.Itoa(cmd.Process.Pid)+"-") {
					holder = p
				}
			}
		}
		if holder == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if holder == nil {
		t.Fatal("cannot tell which seqworker holds the run")
	}
	stopped := make(chan struct{})
	go func() {
		holder.stop()
		close(stopped)
	}()
	time.Sleep(2 * time.Second)
	close(release)
	<-stopped
	if err := run.Wait(); err != nil {
		t.Fatalf("skillbus run with its worker stopped: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var st struct {
		Status string                     `json:"status"`
		Worker string                     `json:"worker"`
		Slots  map[string]json.RawMessage `json:"slots"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &st); err != nil {
		t.Fatalf("skillbus run --json: %v\n%s", err, stdout.String())
	}
	var report string
	_ = json.Unmarshal(st.Slots["report"], &report)
	if st.Status != "succeeded" || report != "held true" {
		t.Errorf("the run whose worker was stopped: status %q, report %q; want succeeded, \"held true\"\n%s", st.Status, report, stdout.String())
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	t.Logf("run in flight: %s got SIGTERM in the middle of a group and exited in %s (grace %s); the run %s, finished by worker %s, deploy.hold called %d time(s)",
		holder.name, holder.stoppedAfter.Round(time.Millisecond), holder.grace, st.Status, st.Worker, n)
	return holder
}

// inflightSeq holds its first group open on deploy.hold.
const inflightSeq = `name: deploy-inflight
description: Holds one group open on a tool the deploy test serves, while its worker is stopped.
groups:
  - name: hold
    out:
      held: object
    timeout: 60s
    tools:
      - tool: deploy.hold
        args: {}
        as: held
  - name: after
    in:
      held: object
    out:
      report: string
    tools:
      - tool: text.render
        args:
          data: {held: $args.held}
          template: "held {{.held.held}}"
        as: report
`

// gauge reads an unlabelled gauge from the /metrics of p (the port of its
// probes); -1 when absent.
func (p *pod) gauge(name string) float64 {
	u := strings.Replace(p.probeURL(p.ctr.ReadinessProbe), p.ctr.ReadinessProbe.HTTPGet.Path, "/metrics", 1)
	resp, err := http.Get(u)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + name + `(?:\{[^}]*\})?\s+([0-9.e+]+)`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// registryLeaseTTL is the TTL of the REGISTRY_LEASE bucket
// (events.RegistryLeaseTTL of the main module, which this module does not
// import).
const registryLeaseTTL = 10 * time.Second

// checkRegistryLease: of the registry replicas the manifest runs, exactly
// one holds the lease (skillbus_registry_leader 1) and none reports a tree
// that differs (they mount the same ConfigMaps). The leader is killed
// (SIGKILL: no release), another takes over within the lease's TTL plus
// one poll (docs/skills.md, "One writer"), and the killed pod is started
// again, as the kubelet would, and stands by.
func checkRegistryLease(t *testing.T, regs []*pod) {
	if len(regs) < 2 {
		t.Skipf("%d registry replica: no lease to hand over", len(regs))
	}
	leaderOf := func(limit time.Duration) (*pod, string) {
		deadline := time.Now().Add(limit)
		var state string
		for {
			var leaders []*pod
			state = ""
			for _, p := range regs {
				p.mu.Lock()
				down := p.stopping
				p.mu.Unlock()
				if down {
					continue
				}
				v := p.gauge("skillbus_registry_leader")
				state += fmt.Sprintf(" %s=%v", p.name, v)
				if v == 1 {
					leaders = append(leaders, p)
				}
			}
			if len(leaders) == 1 {
				return leaders[0], state
			}
			if time.Now().After(deadline) {
				t.Fatalf("want exactly one registry replica holding the lease; skillbus_registry_leader:%s", state)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	leader, state := leaderOf(30 * time.Second)
	t.Logf("registry lease held by %s (skillbus_registry_leader:%s)", leader.name, state)
	for _, p := range regs {
		if v := p.gauge("skillbus_registry_tree_differs"); v != 0 {
			t.Errorf("%s: skillbus_registry_tree_differs = %v; the replicas mount the same library", p.name, v)
		}
	}
	killed := time.Now()
	leader.kill()
	next, _ := leaderOf(time.Minute)
	took := time.Since(killed)
	t.Logf("registry leader %s killed (SIGKILL); %s took the lease after %s (TTL %s)", leader.name, next.name, took.Round(time.Millisecond), registryLeaseTTL)
	// The bound plus slack for a loaded machine and a /metrics poll.
	if took > registryLeaseTTL+2*time.Second+10*time.Second {
		t.Errorf("takeover after %s; docs/skills.md promises the lease's TTL (%s) plus about a second", took, registryLeaseTTL)
	}
	leader.mu.Lock()
	leader.stopping = false
	leader.mu.Unlock()
	leader.start()
	waitReady(t, []*pod{leader}, time.Minute)
	if again, state := leaderOf(30 * time.Second); again != next {
		t.Errorf("the restarted replica took the lease from the live one:%s", state)
	}
}

// runsFinished is the seqworker's counter of finished runs, as its
// Prometheus endpoint names it (docs/operations.md).
const runsFinished = "skillbus_runs_finished_total"

// checkRunMetric scrapes the /metrics of every seqworker replica (the
// port of its probes) and looks for the smoke run counted: a sample of
// runsFinished labelled with the sequence's name and the status succeeded,
// on whichever replica ran it.
func checkRunMetric(t *testing.T, pods []*pod) {
	sample := regexp.MustCompile(`(?m)^` + runsFinished + `\{([^}]*)\}\s+([0-9.e+]+)`)
	var bodies []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		bodies = bodies[:0]
		for _, p := range pods {
			u := strings.Replace(p.probeURL(p.ctr.ReadinessProbe), p.ctr.ReadinessProbe.HTTPGet.Path, "/metrics", 1)
			resp, err := http.Get(u)
			if err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s (%s): %s", u, p.name, resp.Status)
			}
			body := string(b)
			bodies = append(bodies, p.name+" "+u+":\n"+body)
			for _, m := range sample.FindAllStringSubmatch(body, -1) {
				v, _ := strconv.ParseFloat(m[2], 64)
				if strings.Contains(m[1], `="skillbus-smoke"`) && strings.Contains(m[1], `="succeeded"`) && v >= 1 {
					t.Logf("the smoke run is counted by %s: %s{%s} %s", p.name, runsFinished, m[1], m[2])
					return
				}
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("no seqworker's /metrics has a %s sample counting the succeeded run of skillbus-smoke (labels with \"skillbus-smoke\" and \"succeeded\", value >= 1):\n%s", runsFinished, strings.Join(bodies, "\n"))
}

// intOrName is a named port reference.
func intOrName(name string) intstr.IntOrString { return intstr.FromString(name) }
