package k8s

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestConsoleComponent: components/console runs the same image as the
// services, on the pod's loopback only (docs/console.md, "Kubernetes"),
// and its Service points at that port for kubectl port-forward.
func TestConsoleComponent(t *testing.T) {
	for _, tg := range targets {
		if !strings.Contains(tg.name, "components/console") {
			continue
		}
		t.Run(strings.ReplaceAll(tg.name, "/", "_"), func(t *testing.T) {
			b := build(t, tg)
			con, reg := b.get("Deployment", "skillbus-console"), b.get("Deployment", "skillbus-registry")
			if con == nil || reg == nil {
				t.Fatal("no skillbus-console or skillbus-registry Deployment")
			}
			c := con.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			r := reg.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
			if c.Image != r.Image {
				t.Errorf("the console runs %s, the services %s: pin one image", c.Image, r.Image)
			}
			if strings.Join(c.Command, " ")+" "+strings.Join(c.Args, " ") != "/usr/local/bin/skillbus ui" {
				t.Errorf("the console's command is %v %v; want skillbus ui", c.Command, c.Args)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if env["SKILLBUS_LISTEN"] != "127.0.0.1:4280" || env["SKILLBUS_TOKEN"] != "" {
				t.Errorf("the console listens on %q (token set: %v); want 127.0.0.1:4280 without a token", env["SKILLBUS_LISTEN"], env["SKILLBUS_TOKEN"] != "")
			}
			svc := b.get("Service", "skillbus-console")
			if svc == nil {
				t.Fatal("no skillbus-console Service")
			}
			sp := svc.Typed.(*corev1.Service).Spec
			if sp.Type != corev1.ServiceTypeClusterIP || len(sp.Ports) != 1 || sp.Ports[0].Port != 4280 {
				t.Errorf("Service %+v; want a ClusterIP Service on 4280", sp)
			}
			if port, ok := containerPort(c, sp.Ports[0].TargetPort); !ok || port != 4280 {
				t.Errorf("the Service's targetPort %s is not the console's 4280", sp.Ports[0].TargetPort.String())
			}
		})
	}
}
