package e2e_test

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/testkit"
)

// startOCIRegistry serves an in-memory OCI registry on 127.0.0.1 until
// the test ends and returns its host:port.
func startOCIRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// ociCmd runs `opentool-host ARGS` and returns its stdout, stderr and
// exit status.
func ociCmd(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), 0
}

// mustOCI runs `opentool-host ARGS`, which must succeed, and returns
// its stdout.
func mustOCI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := ociCmd(t, args...)
	if code != 0 {
		t.Fatalf("opentool-host %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

// TestPullIntoRunningHost pushes the calculator plugin with a policy,
// and pulls it (flags after REF) into the folder of a running host,
// which hot-loads it: the files are the pushed bytes, the binary
// executable, and add answers.
func TestPullIntoRunningHost(t *testing.T) {
	reg := startOCIRegistry(t)
	src := t.TempDir()
	calc := testkit.InstallPlugin(t, src, "calculator", "./plugins/calculator")
	policy := `{"timeout_ms": 5000, "max_concurrency": 4}`
	if err := os.WriteFile(filepath.Join(src, "calculator.policy.json"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := reg + "/plugins/calculator:1.0"
	out := mustOCI(t, "push", "--dir", src, "calculator", ref, "--plain-http")
	if !strings.Contains(out, "pushed "+reg+"/plugins/calculator:1.0@sha256:") || !strings.Contains(out, "opentool-plugin-calculator (") {
		t.Errorf("push said %q", out)
	}

	dir := t.TempDir()
	hp := startHostProc(t, dir)
	start := time.Now()
	out = mustOCI(t, "pull", ref, "--dir", dir, "--plain-http")
	pulled := time.Since(start)
	if !strings.Contains(out, "pulled "+ref+"@sha256:") || strings.Contains(out, "pinned") {
		t.Errorf("pull said %q", out)
	}
	testkit.Eventually(t, 30*time.Second, "the pulled calculator ready", func() bool {
		return healthOf(t, hp.url)["calculator"].State == "ready"
	})
	if code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add","params":{"a":1.5,"b":2},"id":1}`); code != 200 || m["result"] == nil {
		t.Fatalf("add: %d %v", code, m)
	}
	want, _ := os.ReadFile(calc)
	got, err := os.ReadFile(filepath.Join(dir, "opentool-plugin-calculator"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("pulled binary: %d bytes, want %d identical (%v)", len(got), len(want), err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "opentool-plugin-calculator")); fi.Mode().Perm() != 0o755 {
		t.Errorf("binary mode %v", fi.Mode())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "calculator.policy.json")); string(got) != policy {
		t.Errorf("policy %q", got)
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 {
		t.Errorf("dir holds %d entries, want the 2 pulled files", len(es))
	}
	t.Logf("pull of %d bytes (%.1f MiB) by the command: %v; %s", len(want), float64(len(want))/(1<<20), pulled, strings.TrimSpace(out))
}

// TestPullPinsInLockedHost replaces the calculator of a host run
// --locked by pulling a rebuilt one: pull pins it in opentool.lock
// (binary sha256, function digests, source) before the files arrive, so
// the host serves the new binary, pinned, while mock stays pinned.
func TestPullPinsInLockedHost(t *testing.T) {
	reg := startOCIRegistry(t)
	dir := t.TempDir()
	calc := testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	lockCmd(t, "--dir", dir)
	hp := startHostProc(t, dir, "--locked")
	before := pluginPIDs(t, hp.url)["calculator"]

	// A rebuilt calculator (one more byte: other sha256), pushed.
	src := t.TempDir()
	b, err := os.ReadFile(calc)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt := filepath.Join(src, "opentool-plugin-calculator")
	if err := os.WriteFile(rebuilt, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	ref := reg + "/plugins/calculator:2.0"
	mustOCI(t, "push", rebuilt, ref, "--plain-http")

	out := mustOCI(t, "pull", "--plain-http", "--state-dir", t.TempDir(), ref, "--dir", dir)
	if !strings.Contains(out, "pinned in "+filepath.Join(dir, lockfile.Name)+": calculator") {
		t.Errorf("pull said %q", out)
	}
	lock, err := lockfile.Read(filepath.Join(dir, lockfile.Name))
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := lockfile.FileSHA256(rebuilt)
	src0 := lock.Sources["opentool-plugin-calculator"]
	if lock.Files["opentool-plugin-calculator"] != sum || len(lock.Functions["calculator"]) == 0 || len(lock.Functions["mock"]) == 0 ||
		src0.Ref != ref || src0.SHA256 != sum || !strings.HasPrefix(src0.Manifest, "sha256:") || !strings.Contains(out, src0.Manifest) {
		t.Fatalf("lock after pull: %+v", lock)
	}
	testkit.Eventually(t, 30*time.Second, "the pulled calculator serving, pinned", func() bool {
		st := healthOf(t, hp.url)["calculator"]
		return st.State == "ready" && st.Lock == "pinned" && pluginPIDs(t, hp.url)["calculator"] != before
	})
	if st := healthOf(t, hp.url)["mock"]; st.State != "ready" || st.Lock != "pinned" {
		t.Errorf("mock: %+v", st)
	}
	if code, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`); code != 200 || m["result"] == nil {
		t.Errorf("add: %d %v", code, m)
	}
	if es, _ := os.ReadDir(dir); len(es) != 3 {
		t.Errorf("dir holds %d entries, want 2 plugins and the lock (no staging folder)", len(es))
	}
}

// TestPullCommandRefusals: a plugin built for another architecture than
// the one asked for is refused with exit status 1 and nothing written;
// usage mistakes exit 2.
func TestPullCommandRefusals(t *testing.T) {
	reg := startOCIRegistry(t)
	src := t.TempDir()
	calc := testkit.InstallPlugin(t, src, "calculator", "./plugins/calculator")
	ref := reg + "/p/calculator:1"
	mustOCI(t, "push", calc, ref, "--plain-http")
	if _, errOut, code := ociCmd(t, "push", "--platform", "linux/arm64", calc, ref, "--plain-http"); code != 1 || !strings.Contains(errOut, "its header says linux/amd64, not linux/arm64") {
		t.Errorf("push --platform contradicting the header: exit %d, %q", code, errOut)
	}
	dir := t.TempDir()
	_, errOut, code := ociCmd(t, "pull", ref, "--dir", dir, "--plain-http", "--platform", "linux/arm64")
	if code != 1 || !strings.Contains(errOut, "refused: plugin calculator is built for linux/amd64, not linux/arm64") {
		t.Errorf("wrong architecture: exit %d, %q", code, errOut)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Errorf("refused pull left %d entries", len(es))
	}
	for _, args := range [][]string{
		{"pull", "--dir", dir},
		{"pull", "a/b:1", "c/d:2", "--dir", dir},
		{"pull", "a/b:1", "--dir", dir, "--max-layer-bytes", "0"},
		{"push", ref},
		{"push", "--username", "u", calc, ref},
		{"push", "--dir", src, "calculator", "extra", ref},
		{"push", calc, reg + "/p/calculator@sha256:" + strings.Repeat("0", 64)},
	} {
		if _, errOut, code := ociCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage): %s", args, code, errOut)
		}
	}
}
