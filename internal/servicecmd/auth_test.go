package servicecmd_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startWithUser starts a plain nats-server on port that accepts only the
// user "someone-else"; the caller shuts it down.
func startWithUser(t *testing.T, port int, dir string) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: port, NoSigs: true, NoLog: true,
		JetStream: true, StoreDir: dir, Username: "someone-else", Password: "x"})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return s
}
