package testkit

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// StartHost installs the plugins built from pkgs (package paths such as
// "./plugins/mock"; each is installed as opentool-plugin-BASE) into a temp
// folder, starts a real host on it and closes the host when the test ends.
// mod, when not nil, adjusts the configuration first (Dir, Logger, StateDir
// and a 20 s CallTimeout are preset). It fails the test when a plugin is
// not ready after Start.
func StartHost(t testing.TB, mod func(*core.Config), pkgs ...string) *host.Host {
	t.Helper()
	h := StartHostAsIs(t, mod, pkgs...)
	for _, p := range h.Plugins() {
		if !p.State.Serving() {
			t.Fatalf("plugin %s is %s, want ready: %+v", p.Name, p.State, p)
		}
	}
	return h
}

// StartHostAsIs is StartHost for a test of plugins that may not be
// ready after Start (a server down when the host starts): it does not
// look at their states.
func StartHostAsIs(t testing.TB, mod func(*core.Config), pkgs ...string) *host.Host {
	t.Helper()
	dir := t.TempDir()
	for _, pkg := range pkgs {
		InstallPlugin(t, dir, path.Base(pkg), pkg)
	}
	cfg := core.Config{Dir: dir, Logger: Logger(t), StateDir: t.TempDir(), CallTimeout: 20 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	h, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Errorf("host close: %v", err)
		}
	})
	return h
}
