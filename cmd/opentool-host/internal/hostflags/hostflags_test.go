package hostflags

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/opentool-host/opentool-host/cmd/opentool-host/internal/selfexec"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/process/sandbox"
)

// configOf parses args as the flags of a command made of hostFlags (as
// run, list, call and export have them) and returns hostConfig's result.
func configOf(t *testing.T, args ...string) core.Config {
	t.Helper()
	var cfg core.Config
	var cfgErr error
	flags := Flags("off", DirFlag(false))
	app := &cli.App{
		Name:           "opentool-host",
		ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{{
			Name:   "x",
			Flags:  flags,
			Action: func(c *cli.Context) error { cfg, cfgErr = Config(c); return cfgErr },
		}},
	}
	if err := app.Run(append([]string{"opentool-host", "x"}, args...)); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return cfg
}

// TestHostConfigFlags: every host flag lands in its core.Config field, and
// the defaults are host's own (but --prefix-collisions, on by default).
func TestHostConfigFlags(t *testing.T) {
	cfg := configOf(t, "--dir", "d")
	if cfg.MaxResultBytes != core.DefaultMaxResultBytes || cfg.MaxQueue != 0 || cfg.PluginEnv != nil || !cfg.PrefixCollisions ||
		cfg.MaxConcurrency != 64 || cfg.CallTimeout != time.Minute || cfg.StartTimeout != 10*time.Second {
		t.Errorf("defaults: %+v", cfg)
	}

	cfg = configOf(t, "--dir", "d", "--max-result", "1234", "--max-queue", "7", "--plugin-env", "A_VAR",
		"--plugin-env", "B_VAR,C_VAR", "--prefix-collisions=false", "--max-concurrency", "3", "--call-timeout", "2s",
		"--start-timeout", "3s", "--state-dir", "/s")
	want := core.Config{Dir: "d", MaxResultBytes: 1234, MaxQueue: 7, PluginEnv: []string{"A_VAR", "B_VAR", "C_VAR"},
		PrefixCollisions: false, MaxConcurrency: 3, CallTimeout: 2 * time.Second, StartTimeout: 3 * time.Second, StateDir: "/s"}
	cfg.Logger = nil
	// Declared plugins are served in the host's process.
	if cfg.Declared == nil {
		t.Error("Declared is nil")
	}
	if exe, _ := os.Executable(); len(cfg.Keeper) != 2 || cfg.Keeper[0] != exe || cfg.Keeper[1] != "keeper" {
		t.Errorf("Keeper = %q", cfg.Keeper)
	}
	cfg.Declared, cfg.Launcher, cfg.Keeper = nil, nil, nil // launcher: TestSandboxFlags
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("core.Config = %+v\nwant %+v", cfg, want)
	}
}

// TestSandboxFlags: the sandbox flags fill core.Config.Sandbox (paths made
// absolute, MiB to bytes) and the launcher is this binary's "launch".
func TestSandboxFlags(t *testing.T) {
	cfg := configOf(t, "--dir", "d")
	if exe, _ := os.Executable(); !reflect.DeepEqual(cfg.Launcher, []string{exe, selfexec.Launch}) || !reflect.DeepEqual(cfg.Sandbox, sandbox.Spec{}) {
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
