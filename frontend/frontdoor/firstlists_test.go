package frontdoor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestFirstListsBound: when the first start outlasts the bound, the first
// lists are let go at the bound, and one WARN line names each plugin
// still starting then.
func TestFirstListsBound(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "opentool-plugin-stuck"), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := host.New(core.Config{Dir: dir, StateDir: t.TempDir(), Logger: testkit.Logger(t), StartTimeout: time.Minute, NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = h.Start(ctx) }()
	t.Cleanup(func() { h.Close(context.Background()) })
	testkit.Eventually(t, 20*time.Second, "stuck starting", func() bool {
		ps := h.Plugins()
		return len(ps) == 1 && ps[0].State == core.StateStarting
	})
	var log testkit.SyncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &log, Level: hclog.Warn})
	select {
	case <-firstLists(h, mcpapi.New(h, mcpapi.Config{}), make(chan struct{}), 100*time.Millisecond, logger):
	case <-time.After(20 * time.Second):
		t.Fatal("the first lists were not let go at the bound")
	}
	if got := log.String(); !strings.Contains(got, "still starting") || !strings.Contains(got, "plugins=stuck") {
		t.Errorf("log at the bound: %q, want a line naming stuck", got)
	}
}
