package natsserver

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStoreLockInProcess starts two servers on one store directory: the
// second fails at once with ErrStoreInUse naming the directory and this
// process's pid; after the first shuts down the directory is free again.
func TestStoreLockInProcess(t *testing.T) {
	dir := t.TempDir()
	first, err := Start(Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Shutdown()
	start := time.Now()
	second, err := Start(Options{StoreDir: dir})
	if err == nil {
		second.Shutdown()
		t.Fatalf("Start(StoreDir %s) while another server uses it succeeded; want ErrStoreInUse", dir)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Start on a busy store took %v to fail; want at once", took)
	}
	pid := strconv.Itoa(os.Getpid())
	if !errors.Is(err, ErrStoreInUse) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "pid "+pid) {
		t.Errorf("Start on a busy store = %v; want ErrStoreInUse naming %s and pid %s", err, dir, pid)
	}
	first.Shutdown()
	again, err := Start(Options{StoreDir: dir})
	if err != nil {
		t.Fatalf("Start after the first server shut down = %v; want the store free again", err)
	}
	again.Shutdown()
}

// TestStoreLockAcrossProcesses holds a store in a child process (this test
// binary re-run as a helper) and checks Start here refuses it with the
// child's pid.
func TestStoreLockAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("NATSSERVER_LOCK_HELPER"); dir != "" {
		s, err := Start(Options{StoreDir: dir})
		if err != nil {
			os.Stdout.WriteString("error: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute) // killed by the parent
		s.Shutdown()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "NATSSERVER_LOCK_HELPER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	if !strings.HasPrefix(string(buf[:n]), "ready") {
		t.Fatalf("helper process: %q", buf[:n])
	}
	s, err := Start(Options{StoreDir: dir})
	if err == nil {
		s.Shutdown()
		t.Fatalf("Start(StoreDir %s) while process %d uses it succeeded; want ErrStoreInUse", dir, cmd.Process.Pid)
	}
	want := "pid " + strconv.Itoa(cmd.Process.Pid)
	if !errors.Is(err, ErrStoreInUse) || !strings.Contains(err.Error(), want) {
		t.Errorf("Start on a store held by process %d = %v; want ErrStoreInUse with %q", cmd.Process.Pid, err, want)
	}
	// Once that process is gone the store is usable again, even though
	// the lock file it wrote stays behind.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	s, err = Start(Options{StoreDir: dir})
	if err != nil {
		t.Fatalf("Start after the holder was killed = %v; want the store free", err)
	}
	s.Shutdown()
}
