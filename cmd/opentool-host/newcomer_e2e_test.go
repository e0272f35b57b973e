package main_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/internal/testutil"
)

// ncTools is a NAME.tools.json whose function echo prints who answered.
func ncTools(who string) string {
	return fmt.Sprintf(`{"description":"%s's tools","functions":[
 {"name":"echo","description":"Says %s.","command":["printf","%s"]}]}`, who, who, who)
}

// ncStdout calls fn on the host at url and returns the command's stdout,
// or the error message.
func ncStdout(t *testing.T, url, fn string) string {
	t.Helper()
	_, m := rpc(t, url, `{"jsonrpc":"2.0","method":"`+fn+`","params":{},"id":1}`)
	if res, ok := m["result"].(map[string]any); ok {
		s, _ := res["stdout"].(string)
		return s
	}
	return fmt.Sprint(m["error"])
}

// stopHostProc stops a host with SIGTERM and waits for it to exit.
func stopHostProc(t *testing.T, hp *hostProc) {
	t.Helper()
	_ = hp.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-hp.done:
	case <-time.After(30 * time.Second):
		t.Fatal("host did not exit 30 s after SIGTERM")
	}
}

// TestConflictOwnershipStableAndPrefixed: a plugin dropped into a running
// host declaring a name another plugin owns does not take it and is not
// lost: its function is served as PLUGIN__NAME by default, with one WARN
// line saying so and what to do, and list --url shows the conflict. After
// a restart the same plugin owns the name, although the newcomer sorts
// first by name (the owners are remembered under --state-dir).
func TestConflictOwnershipStableAndPrefixed(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	ctWrite(t, dir, "zeta", ncTools("zeta"))
	hp := startHostProc(t, dir, "--state-dir", state)
	ctWrite(t, dir, "alpha", ncTools("alpha"))
	testutil.Eventually(t, 10*time.Second, "alpha's echo not served as alpha__echo", func() bool {
		return ncStdout(t, hp.url, "alpha__echo") == "alpha"
	})
	if got := ncStdout(t, hp.url, "echo"); got != "zeta" {
		t.Errorf("echo after alpha arrived: %q, want zeta's", got)
	}
	var warn []string
	for _, line := range strings.Split(hp.logs.String(), "\n") {
		if strings.Contains(line, "function name conflict") {
			warn = append(warn, line)
		}
	}
	if len(warn) != 1 || !strings.Contains(warn[0], "[WARN]") || !strings.Contains(warn[0], "served_as=alpha__echo") ||
		!strings.Contains(warn[0], "next=") {
		t.Errorf("want one WARN line naming alpha__echo and the next step, got %q", warn)
	}
	out, errOut, code := runCLI(t, "list", "--url", hp.url)
	if code != 0 || !strings.Contains(out, "function echo is owned by zeta; served as alpha__echo") {
		t.Errorf("list --url (exit %d) does not show the conflict:\n%s%s", code, out, errOut)
	}
	stopHostProc(t, hp)

	hp = startHostProc(t, dir, "--state-dir", state)
	if got := ncStdout(t, hp.url, "echo"); got != "zeta" {
		t.Errorf("echo after a restart: %q, want zeta's (its owner before the restart)", got)
	}
	if got := ncStdout(t, hp.url, "alpha__echo"); got != "alpha" {
		t.Errorf("alpha__echo after a restart: %q", got)
	}
}
