package host_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

func TestKilledMidCallFailsFastAndRestarts(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	h := startHost(t, dir, nil)
	pid := pidOf(t, h)

	errc := make(chan error, 1)
	go func() {
		_, err := h.Call(context.Background(), "sleep", []byte(`{"ms":5000}`))
		errc <- err
	}()
	testkit.Eventually(t, 5*time.Second, "call in the plugin", func() bool {
		return strings.Contains(string(must(h.Call(context.Background(), "sleeps", nil))), `"active":1`)
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var err error
	select {
	case err = <-errc:
	case <-time.After(3 * time.Second):
		t.Fatal("call did not return after its plugin was killed")
	}
	t.Logf("call failed %v after SIGKILL: %v", time.Since(killed), err)
	ee := core.AsError(err)
	if ee == nil || ee.Kind != core.KindExited || !errors.Is(err, core.ErrPluginExited) || ee.Plugin != "faulty" || !strings.Contains(ee.Status, "killed") {
		t.Fatalf("err = %#v, want a KindExited *core.Error for faulty, signal: killed", err)
	}
	// Other plugins are untouched.
	if got := call(t, h, "add", `{"a":1,"b":1}`); got["result"] != 2.0 {
		t.Fatalf("add = %v", got)
	}
	// The plugin comes back (a call waits for the restart).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := h.Call(ctx, "pid", nil)
	if err != nil {
		t.Fatalf("call after restart: %v", err)
	}
	if strings.Contains(string(res), `"pid":`+strconv.Itoa(pid)) {
		t.Fatalf("same pid %d after restart: %s", pid, res)
	}
	t.Logf("functions answering again %v after SIGKILL", time.Since(killed))
	if st := pluginStatus(h, "faulty"); st.Restarts != 1 || st.State != core.StateReady {
		t.Fatalf("status = %+v, want ready with 1 restart", st)
	}
	if alive(pid) {
		t.Fatalf("killed plugin %d still alive", pid)
	}
}

func TestPanicAndExitCarryStderr(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, nil)
	for _, tc := range []struct{ fn, stderr, status string }{
		{"panic", "faulty plugin panics on purpose", "exit status 2"},
		{"exit", "faulty: exiting with status 3", "exit status 3"},
	} {
		_, err := h.Call(context.Background(), tc.fn, nil)
		ee := core.AsError(err)
		if ee == nil || ee.Kind != core.KindExited {
			t.Fatalf("%s: err = %v, want a KindExited *core.Error", tc.fn, err)
		}
		if ee.Status != tc.status {
			t.Fatalf("%s: exit %q, want %q", tc.fn, ee.Status, tc.status)
		}
		// The caller learns the plugin and the status, never its stderr.
		if !strings.Contains(err.Error(), `plugin "faulty"`) || !strings.Contains(err.Error(), tc.status) || strings.Contains(err.Error(), tc.stderr) {
			t.Fatalf("%s: message %q must name the plugin and %q and hold no stderr", tc.fn, err, tc.status)
		}
		// Wait for the restart before the next case.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := h.Call(ctx, "pid", nil); err != nil {
			t.Fatalf("after %s: %v", tc.fn, err)
		}
		cancel()
	}
}

func TestHungPluginIsKilledAfterGrace(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, nil) // CancelGrace 300 ms
	pid := pidOf(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := h.Call(ctx, "hang", nil)
	if !errors.Is(err, core.ErrTimeout) {
		t.Fatalf("hang: err = %v, want ErrTimeout", err)
	}
	testkit.Eventually(t, 5*time.Second, "hung plugin killed", func() bool { return !alive(pid) })
	// A call racing the exit notification may still see the dead process
	// (and fail as exited): wait until the host has noticed the exit.
	testkit.Eventually(t, 5*time.Second, "exit noticed", func() bool {
		st := pluginStatus(h, "faulty")
		return st.PID != pid && st.Restarts == 1
	})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if _, err := h.Call(ctx2, "pid", nil); err != nil {
		t.Fatalf("after kill: %v", err)
	}
}

func TestCancellationReachesPlugin(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, func(c *core.Config) { c.CancelGrace = 5 * time.Second })
	pid := pidOf(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		testkit.Eventually(t, 10*time.Second, "the call is in the plugin", func() bool {
			return pluginStatus(h, "faulty").InFlight == 1
		})
		cancel()
	}()
	_, err := h.Call(ctx, "sleep", []byte(`{"ms":30000}`))
	if !errors.Is(err, core.ErrCanceled) {
		t.Fatalf("err = %v, want ErrCanceled", err)
	}
	if got := call(t, h, "sleeps", ""); got["cancelled"] != 1.0 {
		t.Fatalf("sleeps = %v, want the one sleep cancelled in the plugin", got)
	}
	// The plugin honoured the cancel: it was not killed.
	if got := pidOf(t, h); got != pid {
		t.Fatalf("plugin restarted (%d -> %d): cancellation did not reach it", pid, got)
	}
}

func TestConcurrencyLimitBusy(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, func(c *core.Config) { c.MaxConcurrency = 2 })
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = h.Call(context.Background(), "sleep", []byte(`{"ms":1500}`))
		}()
	}
	testkit.Eventually(t, 10*time.Second, "both slots taken", func() bool {
		return pluginStatus(h, "faulty").InFlight == 2
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := h.Call(ctx, "echo", []byte(`{"x":"y"}`))
	if !errors.Is(err, core.ErrBusy) || !strings.Contains(err.Error(), "no slot of 2 freed") {
		t.Fatalf("err = %v, want ErrBusy", err)
	}
	wg.Wait()
	if got := call(t, h, "echo", `{"x":"y"}`); got["x"] != "y" {
		t.Fatalf("echo after the slots freed = %v", got)
	}
}

func TestCrashLoopMarksFailed(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "crashloop", "./testkit/plugins/crashloop")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	h := startHost(t, dir, nil) // MaxFailures 3
	testkit.Eventually(t, 20*time.Second, "crashloop marked failed", func() bool {
		return pluginStatus(h, "crashloop").State == core.StateFailed
	})
	st := pluginStatus(h, "crashloop")
	if !strings.Contains(st.LastError, "crash loop") || st.PID != 0 {
		t.Fatalf("status = %+v", st)
	}
	// The routing table follows the published state (one rebuild later).
	testkit.Eventually(t, 5*time.Second, "failed plugin's function leaves the document", func() bool {
		for _, f := range h.Document("t", "1", "").Functions {
			if f.Name == "flaky" {
				return false
			}
		}
		return true
	})
	_, err := h.Call(context.Background(), "flaky", nil)
	if !errors.Is(err, core.ErrPluginFailed) || !strings.Contains(err.Error(), "crash loop") {
		t.Fatalf("err = %v, want ErrPluginFailed saying why", err)
	}
	if got := call(t, h, "add", `{"a":1,"b":1}`); got["result"] != 2.0 {
		t.Fatalf("add = %v", got)
	}
	// A fixed binary dropped in its place is tried again (rescan, as SIGHUP).
	testkit.InstallPlugin(t, dir, "crashloop", "./testkit/plugins/collide")
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := call(t, h, "collide_only", ""); got["served_by"] != "collide" {
		t.Fatalf("replacement not served: %v", got)
	}
}

func TestHotReloadAddReplaceRemove(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	logs := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) { c.Watch = true; c.Logger = logs.logger })

	// Add: install(1)-style, CREATE 0600 then write then CHMOD.
	dst := filepath.Join(dir, "opentool-plugin-faulty")
	src := testkit.Build(t, "./testkit/plugins/faulty")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	// A partial, non-executable file must not run: once the watcher has
	// seen it settle and refused it, no plugin was made of it.
	logs.waitFor(t, 10*time.Second, "plugin file not ready", "opentool-plugin-faulty", "not executable")
	if st := pluginStatus(h, "faulty"); st.Name != "" {
		t.Fatalf("partial file was picked up: %+v", st)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	added := time.Now()
	testkit.Eventually(t, 10*time.Second, "new plugin served", func() bool { return h.Function("pid") != nil })
	t.Logf("dropped binary served after %v", time.Since(added))
	pid1 := pidOf(t, h)

	// Editors' temp files and dotfiles are ignored.
	for _, name := range []string{".opentool-plugin-x.swp", "opentool-plugin-faulty~", "opentool-plugin-x.tmp"} {
		if err := os.WriteFile(filepath.Join(dir, name), data[:100], 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// Replace with cp over the file (many WRITEs; text file busy is
	// avoided because the host runs a copy).
	other := testkit.Build(t, "./testkit/plugins/collide")
	od, _ := os.ReadFile(other)
	if err := os.WriteFile(dst, od, 0o755); err != nil {
		t.Fatalf("overwrite running plugin binary: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "replaced plugin served", func() bool { return h.Function("collide_only") != nil })
	if h.Function("pid") != nil {
		t.Fatal("old binary's functions still served after replace")
	}
	testkit.Eventually(t, 10*time.Second, "old process stopped", func() bool { return !alive(pid1) })

	// Remove.
	if err := os.Remove(dst); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "removed plugin gone", func() bool { return h.Function("collide_only") == nil })
	if got := call(t, h, "add", `{"a":1,"b":1}`); got["result"] != 2.0 {
		t.Fatalf("add = %v", got)
	}
	for _, p := range h.Plugins() {
		if p.Name != "calculator" {
			t.Fatalf("unexpected plugin %+v", p)
		}
	}
}

func TestReplaceUnderLoadFailsNoCalls(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, func(c *core.Config) { c.Watch = true })
	v1 := testkit.Build(t, "./testkit/plugins/faulty")
	v2 := buildVariant(t, "2")

	var sent, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				if _, err := h.Call(context.Background(), "sleep", []byte(`{"ms":5}`)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}
	dst := filepath.Join(dir, "opentool-plugin-faulty")
	for i := range 4 {
		bin := v2
		if i%2 == 1 {
			bin = v1
		}
		testkit.CopyFile(t, bin, dst, 0o755)
		want := map[bool]string{true: "2", false: "1"}[i%2 == 0]
		testkit.Eventually(t, 10*time.Second, "version "+want+" serving", func() bool {
			res, err := h.Call(context.Background(), "pid", nil)
			return err == nil && strings.Contains(string(res), `"version":"`+want+`"`)
		})
	}
	close(stop)
	wg.Wait()
	t.Logf("replace under load: %d calls sent, %d failed", sent.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Fatalf("%d of %d calls failed during replaces; first: %v", failed.Load(), sent.Load(), firstErr.Load())
	}
	if sent.Load() < 100 {
		t.Fatalf("only %d calls sent: load too light to mean anything", sent.Load())
	}
}

// buildVariant builds the faulty plugin with main.version set to v.
func buildVariant(t *testing.T, v string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "faulty-v"+v)
	cmd := exec.Command("go", "build", "-ldflags", "-X main.version="+v, "-o", out, "./testkit/plugins/faulty")
	cmd.Dir = testkit.RepoRoot(t)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build variant: %v\n%s", err, b)
	}
	return out
}

// TestBadBinaryKeepsOldServing replaces a running plugin's file with one
// that fails its handshake: the old process keeps serving (rollback), the
// reason is shown, the bad file is not retried on a rescan, and a good
// binary then replaces the old process.
func TestBadBinaryKeepsOldServing(t *testing.T) {
	dir := t.TempDir()
	dst := testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	logs := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) { c.StartTimeout = 3 * time.Second; c.Logger = logs.logger })
	pid := pidOf(t, h)

	testkit.CopyFile(t, testkit.Build(t, "./testkit/plugins/garbage"), dst, 0o755)
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, time.Second, "new plugin binary rejected", "plugin=faulty")
	st := pluginStatus(h, "faulty")
	if st.State != core.StateReady || st.PID != pid || !strings.Contains(st.LastError, "not a plugin handshake") {
		t.Fatalf("status = %+v, want ready on pid %d with the rejection's reason", st, pid)
	}
	if got := pidOf(t, h); got != pid {
		t.Fatalf("pid %d, want the old process %d", got, pid)
	}
	// A rescan does not try the same bad file again.
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.Join(logs.all(), "\n"), "new plugin binary rejected"); n != 1 {
		t.Fatalf("bad binary tried %d times, want once", n)
	}

	testkit.CopyFile(t, buildVariant(t, "2"), dst, 0o755)
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	res := call(t, h, "pid", "")
	if res["version"] != "2" || int(res["pid"].(float64)) == pid {
		t.Fatalf("pid = %v, want version 2 in a new process", res)
	}
	if st := pluginStatus(h, "faulty"); st.State != core.StateReady || st.LastError != "" {
		t.Fatalf("status = %+v", st)
	}
	testkit.Eventually(t, 10*time.Second, "old process drained and stopped", func() bool { return !alive(pid) })
}

// TestTouchedFileNotRestarted touches a running plugin's file (new
// mtime, same content): a rescan, which returns once its actions are
// done, leaves the process alone.
func TestTouchedFileNotRestarted(t *testing.T) {
	dir := t.TempDir()
	dst := testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	logs := newLogRecorder(t)
	h := startHost(t, dir, func(c *core.Config) { c.Logger = logs.logger })
	pid := pidOf(t, h)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(dst, later, later); err != nil {
		t.Fatal(err)
	}
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t, time.Second, "plugin file touched", "plugin=faulty")
	if got := pidOf(t, h); got != pid {
		t.Fatalf("touched file restarted the plugin: pid %d -> %d", pid, got)
	}
	if st := pluginStatus(h, "faulty"); st.Restarts != 0 || st.State != core.StateReady {
		t.Fatalf("status = %+v", st)
	}
}

// TestRemovalDrains removes a plugin's file while a call runs: Rescan
// returns once the call has finished and the process is stopped.
func TestRemovalDrains(t *testing.T) {
	dir := t.TempDir()
	dst := testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	h := startHost(t, dir, nil)
	pid := pidOf(t, h)
	errc := make(chan error, 1)
	go func() {
		_, err := h.Call(context.Background(), "sleep", []byte(`{"ms":500}`))
		errc <- err
	}()
	testkit.Eventually(t, 5*time.Second, "call in flight", func() bool {
		return strings.Contains(string(must(h.Call(context.Background(), "sleeps", nil))), `"active":1`)
	})
	if err := os.Remove(dst); err != nil {
		t.Fatal(err)
	}
	if err := h.Rescan(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("call in flight during removal: %v", err)
		}
	default:
		t.Fatal("Rescan returned before the call in flight finished")
	}
	if alive(pid) {
		t.Fatalf("removed plugin %d still running", pid)
	}
	if h.Function("sleep") != nil || pluginStatus(h, "faulty").Name != "" {
		t.Fatal("removed plugin still served or listed")
	}
	_, err := h.Call(context.Background(), "sleep", nil)
	if !errors.Is(err, core.ErrFunctionNotFound) {
		t.Fatalf("err = %v, want not found", err)
	}
}

// must returns b, panicking on err.
func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
