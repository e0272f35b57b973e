package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/protocol/lockfile"
	"github.com/opentool-host/opentool-host/testkit"
)

// lockStatus is a plugin's state, lock standing and last error from
// GET /health.
type lockStatus struct {
	State     string `json:"state"`
	Lock      string `json:"lock"`
	LastError string `json:"last_error"`
}

// healthOf returns GET /health's plugins by name.
func healthOf(t *testing.T, url string) map[string]lockStatus {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Plugins []struct {
			Name string `json:"name"`
			lockStatus
		} `json:"plugins"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	out := map[string]lockStatus{}
	for _, p := range h.Plugins {
		out[p.Name] = p.lockStatus
	}
	return out
}

// lockCmd runs `opentool-host lock ARGS` and returns its output.
func lockCmd(t *testing.T, args ...string) string {
	t.Helper()
	bin := testkit.Build(t, "./cmd/opentool-host")
	out, err := exec.Command(bin, append([]string{"lock", "--state-dir", t.TempDir()}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("opentool-host lock %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestLockAndRunLocked drives the lock workflow with the real binary: lock
// pins the directory, run --locked serves it (health: pinned), refuses a
// dropped-in plugin and a rebuilt binary (the old process serving 8
// clients with zero failed calls), and serves the new binary once
// `lock --update NAME` pins it.
func TestLockAndRunLocked(t *testing.T) {
	dir := t.TempDir()
	calc := testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	out := lockCmd(t, "--dir", dir)
	if !strings.Contains(out, "1 files, 1 plugins with functions") {
		t.Errorf("lock: %s", out)
	}
	lock, err := lockfile.Read(filepath.Join(dir, lockfile.Name))
	if err != nil {
		t.Fatal(err)
	}
	if sum, _ := lockfile.FileSHA256(calc); lock.Files["opentool-plugin-calculator"] != sum || len(lock.Functions["calculator"]) == 0 {
		t.Fatalf("lock: %+v", lock)
	}

	hp := startHostProc(t, dir, "--locked")
	if st := healthOf(t, hp.url)["calculator"]; st.State != "ready" || st.Lock != "pinned" {
		t.Fatalf("calculator: %+v", st)
	}

	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	testkit.Eventually(t, 10*time.Second, "the unpinned mock refused", func() bool {
		st := healthOf(t, hp.url)["mock"]
		return st.State == "failed" && strings.Contains(st.LastError, "opentool-plugin-mock: not pinned")
	})

	var (
		wg            sync.WaitGroup
		stop          atomic.Bool
		calls, failed atomic.Int64
		firstFailure  atomic.Value
		body          = `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`
		client        = &http.Client{Timeout: 10 * time.Second}
		rebuilt       = filepath.Join(t.TempDir(), "opentool-plugin-calculator")
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				calls.Add(1)
				resp, err := client.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(body))
				if err != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				var m map[string]any
				_ = json.NewDecoder(resp.Body).Decode(&m)
				resp.Body.Close()
				if m["error"] != nil {
					failed.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprint(m["error"]))
				}
			}
		}()
	}
	// A rebuilt binary (one more byte: same behaviour, other sha256).
	b, err := os.ReadFile(calc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rebuilt, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.CopyFile(t, rebuilt, calc, 0o755)
	testkit.Eventually(t, 10*time.Second, "the rebuilt calculator held", func() bool {
		st := healthOf(t, hp.url)["calculator"]
		return st.State == "ready" && st.Lock == "held" && strings.Contains(st.LastError, "is not the pinned")
	})
	stop.Store(true)
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d calls failed while the rebuilt binary was held; first: %v", failed.Load(), calls.Load(), firstFailure.Load())
	}
	t.Logf("%d calls, 0 failed, while the rebuilt binary was held", calls.Load())
	before := pluginPIDs(t, hp.url)["calculator"]

	lockCmd(t, "--dir", dir, "--update", "calculator")
	testkit.Eventually(t, 15*time.Second, "the rebuilt calculator serves once pinned", func() bool {
		st := healthOf(t, hp.url)["calculator"]
		return st.Lock == "pinned" && pluginPIDs(t, hp.url)["calculator"] != before
	})
	if st := healthOf(t, hp.url)["mock"]; st.State != "failed" {
		t.Errorf("mock (still unpinned) after lock --update calculator: %+v", st)
	}
	if code, m := rpc(t, hp.url, body); code != 200 || m["result"] == nil {
		t.Errorf("add after the update: %d %v", code, m)
	}
}

// TestRunLockedWithoutLockFails: --locked with no lock file is refused at
// start, saying how to write one.
func TestRunLockedWithoutLockFails(t *testing.T) {
	bin := testkit.Build(t, "./cmd/opentool-host")
	out, err := exec.Command(bin, "run", "--dir", t.TempDir(), "--addr", testkit.FreeAddr(t), "--locked").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "opentool-host lock --dir") {
		t.Errorf("run --locked without a lock: %v\n%s", err, out)
	}
}
