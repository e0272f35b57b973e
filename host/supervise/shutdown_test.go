package supervise

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/discover"
)

// TestStartCancelledByShutdownIsNotAFailure ends the supervisor's context
// (the host closing) while a plugin is in its handshake, before the
// plugin is told the host closes: the start that fails for it is the
// shutdown's, logged as cancelled, never as "failed to start; retried".
func TestStartCancelledByShutdownIsNotAFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "opentool-plugin-hang")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho 'in the handshake' >&2\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lines := &lineLog{marker: "in the handshake", seen: make(chan struct{})}
	cfg, err := core.Config{Dir: dir, StartTimeout: time.Minute, NoCgroups: true,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: lines, Color: hclog.ColorOff})}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	state, err := discover.NewStateDir(t.TempDir(), nil, cfg.Logger)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = state.Remove() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sv := &Supervisor{Cfg: &cfg, State: state, Log: cfg.Logger, Ctx: ctx, Changed: make(chan struct{}, 1), Events: &core.EventHub{},
		ResourceUpdated: func(string, string) {}, LogMessage: func(string, json.RawMessage) {}, ListChanged: func(string, string) {}}
	c, reason := discover.CheckCandidate(path)
	if reason != "" {
		t.Fatal(reason)
	}
	p := NewPlugin(sv, "hang", path)
	settled := p.Sync(c)
	<-lines.seen
	cancel() // the host closes: its starts give up
	<-settled
	p.Close()
	p.Wait()
	log := lines.String()
	if strings.Contains(log, "failed to start") || strings.Contains(log, "retried when") {
		t.Errorf("a start the shutdown cancelled is logged as a failure:\n%s", log)
	}
	if !strings.Contains(log, "start cancelled") {
		t.Errorf("no line says the start is cancelled:\n%s", log)
	}
}

// lineLog keeps what a logger writes and closes seen at the first line
// holding marker.
type lineLog struct {
	marker string
	seen   chan struct{}
	mu     sync.Mutex
	buf    strings.Builder
}

// Write implements io.Writer.
func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if strings.Contains(string(p), l.marker) && !isClosed(l.seen) {
		close(l.seen)
	}
	return len(p), nil
}

// String returns what was written so far.
func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
