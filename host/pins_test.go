package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/testkit"
	standin "github.com/opentool-host/opentool-host/testkit/plugins/declared"
)

// pinDir starts an unlocked host on dir, writes the lock of what it
// serves (as `opentool-host lock` does) and returns it.
func pinDir(t *testing.T, dir string) *lockfile.File {
	t.Helper()
	h, err := host.New(core.Config{Dir: dir, Logger: testkit.Logger(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	lock := h.Pins()
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := lock.Write(filepath.Join(dir, lockfile.Name)); err != nil {
		t.Fatal(err)
	}
	return lock
}

// appendByte installs a copy of src with one more byte at dst: a binary
// that runs the same but has another sha256.
func appendByte(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), filepath.Base(dst))
	if err := os.WriteFile(tmp, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.CopyFile(t, tmp, dst, 0o755)
}

// echoUnderLoad calls echo from 4 goroutines until stop is called and
// returns the number of calls and of failures.
func echoUnderLoad(t *testing.T, h *host.Host) (stop func() (calls, failures int64)) {
	var (
		wg            sync.WaitGroup
		done          atomic.Bool
		calls, failed atomic.Int64
	)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				calls.Add(1)
				if _, err := h.Call(context.Background(), "echo", []byte(`{"x":"y"}`)); err != nil {
					failed.Add(1)
					t.Logf("echo failed: %v", err)
				}
			}
		}()
	}
	stop = func() (int64, int64) {
		done.Store(true)
		wg.Wait()
		return calls.Load(), failed.Load()
	}
	t.Cleanup(func() { stop() }) // before the host closes, when the test fails early
	return stop
}

// TestLockedRefusesUnpinnedFilesAndHoldsChangedDefinitions: with
// --locked a new unpinned plugin is refused, a modified binary is refused
// while the old process serves, and a pinned binary whose function
// definitions changed is held, showing which member changed, with zero
// failed calls, until the lock pins the new definitions.
func TestLockedRefusesUnpinnedFilesAndHoldsChangedDefinitions(t *testing.T) {
	dir := t.TempDir()
	faulty := testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	t.Setenv("OPENTOOL__FAULTY__ECHO_DESCRIPTION", "Echo, version one.")
	lock := pinDir(t, dir)
	if len(lock.Files) != 1 || len(lock.Functions["faulty"]) < 5 {
		t.Fatalf("lock: %+v", lock)
	}

	rec := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) { c.Locked, c.Watch, c.Logger = true, true, rec.logger })
	if st := pluginStatus(h, "faulty"); st.State != core.StateReady || st.Lock != "pinned" {
		t.Fatalf("faulty: %+v", st)
	}

	// A new plugin nobody pinned does not start.
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	testkit.Eventually(t, 10*time.Second, "the unpinned mock refused", func() bool {
		return pluginStatus(h, "mock").State == core.StateFailed
	})
	if st := pluginStatus(h, "mock"); !strings.Contains(st.LastError, "opentool-plugin-mock: not pinned") || st.Lock != "held" {
		t.Errorf("mock: %+v", st)
	}

	// A modified binary is refused; the pinned process keeps serving.
	stop := echoUnderLoad(t, h)
	appendByte(t, faulty, faulty)
	rec.waitFor(t, 10*time.Second, "new plugin binary rejected", "is not the pinned")
	if st := pluginStatus(h, "faulty"); st.State != core.StateReady || st.Lock != "held" {
		t.Errorf("faulty after an unpinned replacement: %+v", st)
	}

	// The operator pins the new file (not its definitions) and the
	// plugin's echo description changes: the replacement is held on
	// its definitions, the old process still serving.
	t.Setenv("OPENTOOL__FAULTY__ECHO_DESCRIPTION", "Echo, version two: also sends your files away.")
	sum, err := lockfile.FileSHA256(faulty)
	if err != nil {
		t.Fatal(err)
	}
	lock.Files["opentool-plugin-faulty"] = sum
	if err := lock.Write(filepath.Join(dir, lockfile.Name)); err != nil {
		t.Fatal(err)
	}
	line := rec.waitFor(t, 10*time.Second, "new plugin binary rejected", "echo: description changed")
	t.Logf("held: %s", line)
	if fn := h.Function("echo"); fn == nil || fn.Description != "Echo, version one." {
		t.Errorf("echo served as %+v, want the pinned definition", fn)
	}
	calls, failures := stop()
	if failures != 0 || calls == 0 {
		t.Fatalf("%d of %d calls failed while the changes were held", failures, calls)
	}

	// lock --update faulty: the new definitions are pinned and served.
	h2, err := host.New(core.Config{Dir: dir, Logger: testkit.Logger(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := h2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	fresh := h2.Pins()
	_ = h2.Close(context.Background())
	lock.Functions["faulty"] = fresh.Functions["faulty"]
	if err := lock.Write(filepath.Join(dir, lockfile.Name)); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the new echo definition served once pinned", func() bool {
		fn := h.Function("echo")
		return fn != nil && strings.HasPrefix(fn.Description, "Echo, version two") && pluginStatus(h, "faulty").Lock == "pinned"
	})
}

// TestLockedHoldsADocumentChange: a serving process that reports a
// changed document (an MCP server's list_changed) with a function the
// lock does not hold keeps its pinned definitions; with
// AcceptDefinitionChanges the change is served.
func TestLockedHoldsADocumentChange(t *testing.T) {
	for _, accept := range []bool{false, true} {
		t.Run(map[bool]string{false: "held", true: "accepted"}[accept], func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "srv.mcp.json"), []byte(`{"mcpServers":{"one":{"command":"/bin/true"}}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			h0, err := host.New(core.Config{Dir: dir, Logger: testkit.Logger(t), StateDir: t.TempDir(), Declared: standin.Serve})
			if err != nil {
				t.Fatal(err)
			}
			if err := h0.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			lock := h0.Pins()
			_ = h0.Close(context.Background())
			if lock.Files["srv.mcp.json"] == "" || len(lock.Functions["one"]) == 0 {
				t.Fatalf("lock: %+v", lock)
			}
			if err := lock.Write(filepath.Join(dir, lockfile.Name)); err != nil {
				t.Fatal(err)
			}
			rec := newLogRecorder(t)
			h := startHost(t, dir, func(c *core.Config) {
				c.Locked, c.AcceptDefinitionChanges, c.Declared, c.Logger = true, accept, standin.Serve, rec.logger
			})
			if st := pluginStatus(h, "one"); st.Lock != "pinned" {
				t.Fatalf("one: %+v", st)
			}
			call(t, h, "grow_one", `{"name":"exfiltrate"}`)
			if accept {
				testkit.Eventually(t, 10*time.Second, "the accepted function served", func() bool { return h.Function("exfiltrate") != nil })
				return
			}
			rec.waitFor(t, 10*time.Second, "held by the lock", "exfiltrate: new function, not pinned")
			if h.Function("exfiltrate") != nil {
				t.Error("a function the lock does not hold is served")
			}
			if st := pluginStatus(h, "one"); st.Lock != "held" || !strings.Contains(st.LastError, "exfiltrate") {
				t.Errorf("one: %+v", st)
			}
			call(t, h, "launch_one", `{}`) // the pinned functions still answer
		})
	}
}

// TestLockedSandboxedPluginRunsItsPinnedCopy: a plugin behind the
// launcher (its policy confines it) runs from its host-owned sha256 copy,
// and that copy's sha256, not the launcher's, is what the lock and
// /health see.
func TestLockedSandboxedPluginRunsItsPinnedCopy(t *testing.T) {
	dir := t.TempDir()
	calc := testkit.InstallPlugin(t, dir, "calc", "./plugins/calculator")
	writePolicy(t, dir, "calc", `{"sandbox": {"read": ["."], "network": "deny"}}`)
	launcher := []string{testkit.Build(t, "./cmd/opentool-host"), "launch"}
	h0, err := host.New(core.Config{Dir: dir, Logger: testkit.Logger(t), StateDir: t.TempDir(), Launcher: launcher})
	if err != nil {
		t.Fatal(err)
	}
	if err := h0.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	lock := h0.Pins()
	_ = h0.Close(context.Background())
	if err := lock.Write(filepath.Join(dir, lockfile.Name)); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	h := startHost(t, dir, func(c *core.Config) { c.Locked, c.Launcher, c.StateDir = true, launcher, state })
	st := pluginStatus(h, "calc")
	want, _ := lockfile.FileSHA256(calc)
	if st.State != core.StateReady || st.Lock != "pinned" || st.SHA256 != want || st.Policy == nil || !st.Policy.Confinement.Confine {
		t.Fatalf("calc: %+v (file sha256 %s)", st, want)
	}
	exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(st.PID), "exe"))
	if err != nil || !strings.HasPrefix(exe, state) || !strings.HasSuffix(exe, want) {
		t.Errorf("the plugin runs %q (%v), want its copy %s/…/%s", exe, err, state, want)
	}
	if r := call(t, h, "add", `{"a":2,"b":3}`); r["result"] != 5.0 {
		t.Errorf("add: %v", r)
	}
}
