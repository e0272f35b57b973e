package mcpadapter_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// The bounds of a long outage (issue 44: "a remote server down for 30 s
// is served again within 10 s of its return with no signal").
const (
	longOutage     = 30 * time.Second
	outageCall     = time.Second      // a call during the outage is answered within
	servedAgainMax = 10 * time.Second // the server is served again after its return within
)

// freeAddr is an address of 127.0.0.1 where nothing listens (a port the
// OS chose, closed again).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// servedAgain waits until echo of h answers, at most bound, and returns
// how long it took.
func servedAgain(t *testing.T, h *host.Host, bound time.Duration) time.Duration {
	t.Helper()
	back := time.Now()
	testkit.Eventually(t, bound+5*time.Second, "echo served again after the server came back", func() bool {
		_, err := h.Call(context.Background(), "echo", []byte(`{}`))
		return err == nil
	})
	return time.Since(back)
}

// TestRemoteServerDownAtStart: a server declared by URL that does not
// listen when the host starts is not failed: it is restarting with the
// remote backoff, as in an outage, and is served once it listens, with no
// signal.
func TestRemoteServerDownAtStart(t *testing.T) {
	entered := make(chan struct{}, 1)
	far := &remoteServer{t: t, addr: freeAddr(t), srv: outageServer(entered), answers: make(chan []byte, 16)}
	t.Cleanup(far.stop)
	h, _ := declaredHostBy(t, testkit.StartHostAsIs, "far", map[string]any{"url": far.url()}, nil, func(c *core.Config) {
		c.Restart = core.RestartPolicy{MaxFailures: 2}
	}, mcpapi.HTTPOptions{})
	st := restartingPast(t, h, 2)
	t.Logf("/health while down since the start: state %s, failures %d, last error %q", st.State, st.Failures, st.LastError)
	far.start()
	took := servedAgain(t, h, servedAgainMax)
	t.Logf("served %v after the server first listened; /health: %s", took, farStatus(h).State)
	if took > servedAgainMax {
		t.Errorf("served %v after the server first listened, want within %v", took, servedAgainMax)
	}
}

// TestRemoteServerLongOutage: a server declared by URL down for 30 s:
// every call meanwhile fails within 1 s, retryable (transport); once it
// listens again on the same address the host serves it within 10 s, with
// no signal.
func TestRemoteServerLongOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30 s outage: not in -short")
	}
	far := startRemote(t, outageServer(make(chan struct{}, 1)))
	h, _ := declaredHost(t, "far", map[string]any{"url": far.url()}, nil, nil, mcpapi.HTTPOptions{})
	ctx := context.Background()
	if _, err := h.Call(ctx, "echo", []byte(`{}`)); err != nil {
		t.Fatalf("echo before the outage: %v", err)
	}
	far.stop()
	gone := time.Now()
	var slowest time.Duration
	calls := 0
	for time.Since(gone) < longOutage {
		asked := time.Now()
		_, err := h.Call(ctx, "echo", []byte(`{}`))
		took := time.Since(asked)
		calls++
		slowest = max(slowest, took)
		var he *core.Error
		if !errors.As(err, &he) || !he.Kind.Retryable() {
			t.Fatalf("echo %v into the outage: %v, want a retryable *core.Error", asked.Sub(gone), err)
		}
		if took > outageCall {
			t.Errorf("echo %v into the outage answered in %v, want within %v: %v", asked.Sub(gone), took, outageCall, he)
		}
		time.Sleep(500 * time.Millisecond) // paces the calls; asserts nothing
	}
	st := farStatus(h)
	t.Logf("outage of %v: %d calls, the slowest answered in %v; /health: state %s, failures %d, last error %q", time.Since(gone).Round(time.Millisecond), calls, slowest, st.State, st.Failures, st.LastError)
	far.start()
	took := servedAgain(t, h, servedAgainMax)
	t.Logf("served again %v after the server came back; /health: %s", took, farStatus(h).State)
	if took > servedAgainMax {
		t.Errorf("served again %v after the server came back, want within %v", took, servedAgainMax)
	}
}
