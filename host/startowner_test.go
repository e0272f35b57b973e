package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestCallWhileStartingGoesToTheOwner: a call made while the host starts,
// of a name two plugins declare, reaches the name's remembered owner,
// which is still starting, and not the other plugin that came up first
// (before, the first plugin up served the name until the start ended).
// The call is made once the other plugin serves its own functions, while
// the owner is held in a start it cannot finish until the test lets it
// (right after the call).
func TestCallWhileStartingGoesToTheOwner(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	calc := testkit.Build(t, "./plugins/calculator")
	owner := filepath.Join(dir, "opentool-plugin-zcalc")
	testkit.CopyFile(t, calc, owner, 0o755)
	mod := func(c *core.Config) { c.StateDir = state; c.StartTimeout = 30 * time.Second; c.PrefixCollisions = true }
	first := startHost(t, dir, mod) // zcalc alone: it owns add, remembered under state
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// zcalc now waits for a file before it starts; collide, which sorts
	// first and declares add too, comes up at once.
	gate := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\nwhile [ ! -e " + gate + " ]; do sleep 0.05; done\nexec " + calc + "\n"
	if err := os.WriteFile(owner, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.InstallPlugin(t, dir, "collide", "./testkit/plugins/collide")
	cfg := core.Config{Dir: dir, Logger: testkit.Logger(t), CallTimeout: 10 * time.Second}
	mod(&cfg)
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	started := make(chan error, 1)
	go func() { started <- h.Start(context.Background()) }()
	for h.Function("collide_only") == nil {
		select {
		case <-h.Changed():
		case err := <-started:
			t.Fatalf("the start ended (%v) before collide was served", err)
		case <-time.After(20 * time.Second):
			t.Fatal("collide not served within 20 s")
		}
	}
	if f := h.Function("add"); f != nil {
		t.Errorf("add is listed while its owner zcalc is still starting: %+v", f)
	}
	answer := make(chan string, 1)
	go func() {
		res, err := h.Call(context.Background(), "add", []byte(`{"a":1,"b":2}`))
		if err != nil {
			answer <- "error: " + err.Error()
			return
		}
		answer <- string(res)
	}()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := <-answer; got != `{"result":3}` {
		t.Fatalf("add while starting answered %s, want the owner zcalc's {\"result\":3}", got)
	}
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if p := h.Function("collide__add"); p == nil {
		t.Errorf("collide's add is not served as collide__add after the start")
	}
}
