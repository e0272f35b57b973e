package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
)

// TestCloseDuringStartSaysCancelled closes the host while a plugin is in
// its handshake (a script that says so on stderr and never answers): the
// log says the start is cancelled by the shutdown, never that the plugin
// failed to start and will be retried (nothing is retried: the host is
// stopping).
func TestCloseDuringStartSaysCancelled(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'waiting for ever' >&2\nexec sleep 60\n"
	if err := os.WriteFile(filepath.Join(dir, "opentool-plugin-hang"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rec := newLogRecorder(t)
	h, err := host.New(core.Config{Dir: dir, Logger: rec.logger, StateDir: t.TempDir(), StartTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- h.Start(context.Background()) }()
	rec.waitFor(t, 20*time.Second, "plugin.hang", "waiting for ever")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	<-started // ErrClosed or nil: either way the start is over
	rec.waitFor(t, 5*time.Second, "plugin=hang", "start cancelled")
	for _, l := range rec.all() {
		if strings.Contains(l, "failed to start") || strings.Contains(l, "retried when") {
			t.Errorf("a start cancelled by the shutdown is logged as a failure: %q", strings.TrimSpace(l))
		}
	}
}
