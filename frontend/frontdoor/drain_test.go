package frontdoor

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestShutdownClosesUnusedConns: a connection opened ahead of need (no
// byte sent) does not hold http.Server.Shutdown for its 5 s, while a
// young one is left to send its request.
func TestShutdownClosesUnusedConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fresh := newFreshConns()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }), ConnState: fresh.track}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	// A young unused connection is not closed, and its request is served.
	young, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer young.Close()
	waitTracked(t, fresh, 1)
	if n := fresh.closeUnused(unusedConnAge); n != 0 {
		t.Fatalf("closeUnused closed %d young connections", n)
	}
	if _, err := young.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(young), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("request on the young connection: %v %v", resp, err)
	}
	resp.Body.Close()

	// An unused connection older than unusedConnAge is closed during
	// Shutdown, which then returns long before 5 s.
	unused, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	waitTracked(t, fresh, 1)
	shut, closed := make(chan struct{}), make(chan int, 1)
	go fresh.closeUnusedUntil(shut, closed)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(ctx)
	close(shut)
	took := time.Since(start)
	if err != nil || took > unusedConnAge+2*time.Second {
		t.Fatalf("Shutdown with an unused connection: %v after %v, want about %v", err, took, unusedConnAge)
	}
	if n := <-closed; n != 1 {
		t.Fatalf("closed %d unused connections, want 1", n)
	}
	t.Logf("Shutdown took %v with an unused connection", took)
}

// waitTracked waits until fresh tracks n connections.
func waitTracked(t *testing.T, fresh *freshConns, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fresh.mu.Lock()
		got := len(fresh.m)
		fresh.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracking %d new connections, want %d", got, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWaitDrainDelay: the delay runs out, a second signal or a server
// failure ends it early, SIGHUP is handled without ending it.
func TestWaitDrainDelay(t *testing.T) {
	log := hclog.NewNullLogger()
	sigs, errc := make(chan os.Signal, 2), make(chan error, 1)
	hups := 0
	hup := func() { hups++ }

	start := time.Now()
	waitDrainDelay(0, sigs, errc, hup, log)
	waitDrainDelay(50*time.Millisecond, sigs, errc, hup, log)
	if d := time.Since(start); d < 50*time.Millisecond || d > 5*time.Second {
		t.Fatalf("0 then 50ms took %v", d)
	}

	sigs <- syscall.SIGHUP
	sigs <- syscall.SIGTERM
	start = time.Now()
	waitDrainDelay(time.Minute, sigs, errc, hup, log)
	if d := time.Since(start); d > 5*time.Second || hups != 1 {
		t.Fatalf("SIGHUP then SIGTERM: %v, %d hups; want an early end after one hup", d, hups)
	}

	errc <- http.ErrServerClosed
	start = time.Now()
	waitDrainDelay(time.Minute, sigs, errc, hup, log)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("server failure: %v", d)
	}
}

// TestExposure: keys, --insecure-no-auth or a loopback address let the
// host serve; nothing else does.
func TestExposure(t *testing.T) {
	for _, tc := range []struct {
		addr           string
		auth, insecure bool
		want, loopback bool
	}{
		{"127.0.0.1:9627", false, false, true, true},
		{"[::1]:9627", false, false, true, true},
		{"127.3.2.1:9627", false, false, true, true},
		{"0.0.0.0:9627", false, false, false, false},
		{"[::]:9627", false, false, false, false},
		{"10.1.2.3:9627", false, false, false, false},
		{"0.0.0.0:9627", true, false, true, false},
		{"0.0.0.0:9627", false, true, true, false},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		err = exposure(addr, tc.auth, tc.insecure)
		if (err == nil) != tc.want || isLoopback(addr) != tc.loopback {
			t.Errorf("%s auth %v insecure %v: %v, loopback %v", tc.addr, tc.auth, tc.insecure, err, isLoopback(addr))
		}
		if err != nil && !strings.Contains(err.Error(), "--insecure-no-auth") {
			t.Errorf("%s: the refusal does not name --insecure-no-auth: %v", tc.addr, err)
		}
	}
}
