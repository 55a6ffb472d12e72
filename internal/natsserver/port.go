package natsserver

import (
	"fmt"
	"net"
)

// freePort asks the kernel for a free TCP port on the loopback interface.
// Cluster routes need the ports known before the servers start.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("natsserver: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
