package tool_test

import (
	"context"
	"testing"
	"time"

	"github.com/skillbus/skillbus/internal/natsserver"
	"github.com/skillbus/skillbus/pkg/tool"
)

// TestWhereMetadata checks that a provider publishes where it runs: its
// ServerConfig.Site and the name of the server its connection is on, and
// that Discover reports both per endpoint — and that the caller's own
// Metadata map is left as it was.
func TestWhereMetadata(t *testing.T) {
	s := natsserver.StartTB(t, natsserver.Options{Name: "skillbus-edge-home"})
	md := map[string]string{tool.MetadataConfig: "root=/srv"}
	srv, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "home-tools", Site: "home", Metadata: md}, echo)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	plain, err := tool.Serve(natsserver.ConnectTB(t, s), tool.ServerConfig{Name: "hub-tools"}, tool.Tool{Name: "test.other", Func: echo.Func})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop(context.Background())
	if len(md) != 1 {
		t.Errorf("Serve changed the caller's Metadata: %v", md)
	}
	eps, err := tool.Discover(context.Background(), natsserver.ConnectTB(t, s), 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]tool.Endpoint{}
	for _, e := range eps {
		got[e.Tool] = e
	}
	if e := got["test.echo"]; e.Site != "home" || e.Server != "skillbus-edge-home" || e.Config != "root=/srv" {
		t.Errorf("test.echo: site %q, server %q, config %q; want home, skillbus-edge-home, root=/srv", e.Site, e.Server, e.Config)
	}
	if e := got["test.other"]; e.Site != "" || e.Server != "skillbus-edge-home" {
		t.Errorf("test.other: site %q, server %q; want no site and the server's name", e.Site, e.Server)
	}
}
