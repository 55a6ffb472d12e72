package natsserver

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestStartShutdown(t *testing.T) {
	s, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.StoreDir()
	if !strings.HasPrefix(s.ClientURL(), "nats://127.0.0.1:") {
		t.Errorf("ClientURL() = %q; want nats://127.0.0.1:PORT", s.ClientURL())
	}
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	if !nc.IsConnected() {
		t.Fatal("not connected")
	}
	nc.Close()
	s.Shutdown()
	s.Shutdown() // safe twice
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary store %s still exists after Shutdown (stat: %v)", dir, err)
	}
}

func TestGivenPortAndDirKept(t *testing.T) {
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := Start(Options{Port: p, StoreDir: dir, MaxPayload: 4096})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := s.Connect()
	if err != nil {
		t.Fatal(err)
	}
	if nc.MaxPayload() != 4096 {
		t.Errorf("MaxPayload() = %d; want 4096", nc.MaxPayload())
	}
	nc.Close()
	if !strings.HasSuffix(s.ClientURL(), ":"+itoa(p)) {
		t.Errorf("ClientURL() = %q; want port %d", s.ClientURL(), p)
	}
	s.Shutdown()
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("given store dir removed: %v", err)
	}
	// The same port twice fails with an error, not a hang.
	s1 := StartTB(t, Options{Port: p})
	_ = s1
	if s2, err := Start(Options{Port: p, ReadyTimeout: time.Second}); err == nil {
		s2.Shutdown()
		t.Errorf("second Start on port %d succeeded; want an error", p)
	}
}

func TestNegativePort(t *testing.T) {
	if _, err := Start(Options{Port: -3}); err == nil || !strings.Contains(err.Error(), "Port") {
		t.Errorf("Start(Port: -3) = %v; want an error naming Port", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
