package e2e_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// runUntilServing runs `opentool-host run args...` until it logs
// "serving:" (then stops it) or exits. It returns the output so far, the
// exit code (-1 when it served) and whether it served.
func runUntilServing(t *testing.T, args ...string) (string, int, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testkit.Build(t, "./cmd/opentool-host"), append([]string{"run", "--state-dir", t.TempDir(), "--drain-delay", "0"}, args...)...)
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	served := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "serving:") {
			served = true
			_ = cmd.Process.Kill()
			break
		}
	}
	_ = cmd.Wait()
	if served {
		return b.String(), -1, true
	}
	return b.String(), cmd.ProcessState.ExitCode(), false
}

// TestAPIKeyRequiredBeyondLoopback: `run` on an address beyond loopback
// refuses to start without API keys, unless --insecure-no-auth; loopback
// (by address or name) needs none.
func TestAPIKeyRequiredBeyondLoopback(t *testing.T) {
	dir := t.TempDir() // no plugin: nothing is exposed while a case serves
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"ops","key":"k-file","allow":["*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		serve bool
		want  string
	}{
		{"0.0.0.0 without keys", []string{"--addr", "0.0.0.0:0"}, false, "beyond loopback, without API keys"},
		{"all interfaces without keys", []string{"--addr", ":0"}, false, "--insecure-no-auth"},
		{"0.0.0.0 with --api-key", []string{"--addr", "0.0.0.0:0", "--api-key", "k1"}, true, "api_keys=1"},
		{"0.0.0.0 with --api-keys-file", []string{"--addr", "0.0.0.0:0", "--api-keys-file", keys}, true, "key_names=ops"},
		{"0.0.0.0 with --insecure-no-auth", []string{"--addr", "0.0.0.0:0", "--insecure-no-auth"}, true, "serving without API keys beyond loopback"},
		{"127.0.0.1 without keys", []string{"--addr", "127.0.0.1:0"}, true, "api_keys=0"},
		{"localhost without keys", []string{"--addr", "localhost:0"}, true, "api_keys=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code, served := runUntilServing(t, append([]string{"--dir", dir}, tc.args...)...)
			if served != tc.serve || !strings.Contains(out, tc.want) {
				t.Fatalf("served %v (exit %d), want %v, and output containing %q:\n%s", served, code, tc.serve, tc.want, out)
			}
			if !served && (code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0) {
				t.Fatalf("refusal: exit %d, want 2 with one line:\n%s", code, out)
			}
		})
	}
}
