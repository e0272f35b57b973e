package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/opentool-host/opentool-host/sandbox"
)

// TestSandboxFlags: the sandbox flags fill host.Config.Sandbox (paths made
// absolute, MiB to bytes) and the launcher is this binary's "launch".
func TestSandboxFlags(t *testing.T) {
	cfg := configOf(t, "--dir", "d")
	if exe, _ := os.Executable(); !reflect.DeepEqual(cfg.Launcher, []string{exe, launchName}) || !reflect.DeepEqual(cfg.Sandbox, sandbox.Spec{}) {
		t.Errorf("defaults: Launcher %q, Sandbox %+v", cfg.Launcher, cfg.Sandbox)
	}
	cfg = configOf(t, "--dir", "d", "--sandbox", "--sandbox-read", "data", "--sandbox-read", "/etc/ssl", "--sandbox-deny-network",
		"--require-sandbox", "--plugin-memory-mb", "2048", "--plugin-cpu-seconds", "60", "--plugin-processes", "32")
	wd, _ := os.Getwd()
	want := sandbox.Spec{Confine: true, Read: []string{filepath.Join(wd, "data"), "/etc/ssl"}, DenyNetwork: true, Require: true,
		MemoryBytes: 2048 << 20, CPUSeconds: 60, Processes: 32}
	if !reflect.DeepEqual(cfg.Sandbox, want) {
		t.Errorf("Sandbox = %+v\nwant %+v", cfg.Sandbox, want)
	}
}
