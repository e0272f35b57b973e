package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/bench/harness"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// soakShortDuration is how long the short soaks of make test call: a few
// seconds, or OPENTOOL_SOAK_SHORT (a Go duration).
func soakShortDuration(t *testing.T) time.Duration {
	if s := os.Getenv("OPENTOOL_SOAK_SHORT"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("OPENTOOL_SOAK_SHORT: %v", err)
		}
		return d
	}
	return 4 * time.Second
}

// installNamed installs n named echo plugins p0…p(n-1) into dir.
func installNamed(t *testing.T, dir, bin string, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
		if _, err := harness.WriteNamedPlugin(bin, dir, names[i], 0); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

func checkSoak(t *testing.T, r *harness.SoakReport) {
	t.Helper()
	t.Logf("soak report:\n%s", r)
	for _, f := range r.Failures() {
		t.Error(f)
	}
	if r.GoroutineDump != "" {
		t.Logf("goroutines after the soak:\n%s", r.GoroutineDump)
	}
	if r.Kills == 0 {
		t.Error("the chaos loop killed no plugin")
	}
}

// TestSoakShort is the short soak against an in-process host (so that the
// race detector sees the host and goroutines are counted): 64 clients
// call 8 plugins while one is SIGKILLed every 200 ms and one binary is
// replaced every second. It fails on hung calls, calls that fail without a
// JSON-RPC error, a dead host, goroutine or fd growth, and plugin
// processes left after Close.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	bin := testkit.Build(t, "./testkit/plugins/echo")
	dir, state := t.TempDir(), t.TempDir()
	names := installNamed(t, dir, bin, 8)
	callTimeout := 3 * time.Second
	target, err := harness.StartInProcess(context.Background(), core.Config{
		Dir:         dir,
		StateDir:    state,
		Logger:      testkit.Logger(t),
		Watch:       true,
		CallTimeout: callTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := harness.Soak(target, harness.SoakConfig{
		Duration:     soakShortDuration(t),
		Clients:      64,
		Plugins:      names,
		Dir:          dir,
		PluginBin:    bin,
		ReplaceEvery: time.Second,
		CallTimeout:  callTimeout,
		Log:          t.Logf,
	})
	checkSoak(t, r)
}

// TestSoakShortProcess is the short soak against a real opentool-host
// process, stopped with SIGTERM at the end: it checks the shutdown path
// and that no plugin process outlives the host.
func TestSoakShortProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("soak: skipped with -short")
	}
	bin := testkit.Build(t, "./testkit/plugins/echo")
	hostBin := testkit.Build(t, "./cmd/opentool-host")
	dir, state := t.TempDir(), t.TempDir()
	names := installNamed(t, dir, bin, 8)
	p, err := harness.StartHostProcess(hostBin, harness.HostOptions{
		Dir: dir, StateDir: filepath.Join(state, "s"),
		Args: []string{"--call-timeout", "3s"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("host output:\n%s", p.Output())
		}
	})
	r := harness.Soak(p, harness.SoakConfig{
		Duration:     soakShortDuration(t),
		Clients:      64,
		Plugins:      names,
		Dir:          dir,
		PluginBin:    bin,
		ReplaceEvery: time.Second,
		CallTimeout:  3 * time.Second,
		Log:          t.Logf,
	})
	checkSoak(t, r)
}
