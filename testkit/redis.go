package testkit

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// StartRedis starts a redis-server of Debian's package on a free loopback
// port for the test, without persistence, stops it when the test ends,
// and returns its URL redis://127.0.0.1:PORT/0; args are further
// redis-server options ("--requirepass", PASSWORD). It skips the test, saying
// why, when redis-server is not installed (make test installs it through
// scripts/deps-redis.sh, which prints SKIP with the reason when it
// cannot).
func StartRedis(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed (make test installs Debian's redis-server through scripts/deps-redis.sh; it printed SKIP with the reason)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "Ready to accept connections") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(20 * time.Second):
		t.Fatal("redis-server not ready after 20 s")
	}
	return fmt.Sprintf("redis://127.0.0.1:%d/0", port)
}
