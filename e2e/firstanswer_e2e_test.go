package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestListenerAnswersBeforePluginsStart (issue 23): a plugin that never
// completes its handshake delays nothing else. The listener answers at
// once with readiness "starting", and a call to another plugin's function
// succeeds while the stuck plugin is still within its start timeout
// (before this, the host answered nothing until --start-timeout).
func TestListenerAnswersBeforePluginsStart(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	stuck := filepath.Join(dir, "opentool-plugin-stuck")
	if err := os.WriteFile(stuck, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const startTimeout = 60 * time.Second
	begin := time.Now()
	hp := startHostProcUntil(t, dir, "listening;", "--start-timeout", startTimeout.String())
	resp, err := http.Get(hp.url + "/health?ready=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readiness while the stuck plugin starts: %d, want 503 starting", resp.StatusCode)
	}
	code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`)
	took := time.Since(begin)
	if res, _ := m["result"].(map[string]any); code != 200 || res == nil {
		t.Fatalf("add while another plugin is stuck starting: %d %v", code, m)
	}
	if took >= startTimeout {
		t.Fatalf("the first answer took %v: it waited for the stuck plugin's start timeout", took)
	}
	resp, err = http.Get(hp.url + "/health?ready=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readiness after the answer: %d: the stuck plugin cannot have started", resp.StatusCode)
	}
	t.Logf("first answer %v after the host's exec, the stuck plugin still starting (timeout %v)", took.Round(time.Millisecond), startTimeout)
}

// TestSignalWhilePluginsStart: SIGINT while a plugin hangs at start
// stops the host at once (the start gives up and everything is undone),
// not after the plugin's start timeout; no plugin process is left, and
// the log does not call the cancelled start a failure to be retried.
func TestSignalWhilePluginsStart(t *testing.T) {
	dir := t.TempDir()
	stuck := filepath.Join(dir, "opentool-plugin-stuck")
	// A sleep of its own: other tests (and make test's other legs, at the
	// same time) run "sleep 600" too.
	sleep := fmt.Sprintf("sleep 600.%d", os.Getpid())
	if err := os.WriteFile(stuck, []byte("#!/bin/sh\nexec "+sleep+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hp := startHostProcUntil(t, dir, "listening;", "--start-timeout", "60s")
	begin := time.Now()
	if err := hp.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hp.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the host did not stop within 20 s of SIGINT (start timeout 60 s)")
	}
	if !hp.cmd.ProcessState.Success() {
		t.Errorf("exit: %v, want 0", hp.cmd.ProcessState)
	}
	t.Logf("stopped %v after SIGINT", time.Since(begin).Round(time.Millisecond))
	<-hp.logged
	if log := hp.logs.String(); strings.Contains(log, "failed to start") || strings.Contains(log, "retried when") {
		t.Errorf("the start the signal cancelled is logged as a failure to retry:\n%s", log)
	}
	testkit.Eventually(t, 5*time.Second, "no "+sleep+" left", func() bool {
		out, _ := exec.Command("pgrep", "-f", "^"+regexp.QuoteMeta(sleep)+"$").Output()
		return len(strings.TrimSpace(string(out))) == 0
	})
}
