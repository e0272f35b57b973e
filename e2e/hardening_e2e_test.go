package e2e_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// environ reads the environment a process started with.
func environ(t *testing.T, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range bytes.Split(raw, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			env[k] = v
		}
	}
	return env
}

// TestPluginEnvAllowList: a plugin's environment is an allow-list; the
// host's API keys and other variables never reach it, and
// OPENTOOL_<PLUGIN>_* reaches that plugin only.
func TestPluginEnvAllowList(t *testing.T) {
	const key = "sekrit-key-4f1c"
	t.Setenv("OPENTOOL_API_KEYS", key)
	t.Setenv("OPENTOOL__FILES__ROOT", t.TempDir())
	t.Setenv("OPENTOOL__FAULTY__TOKEN", "faulty-only")
	t.Setenv("SOME_HOST_SECRET", "host-only")
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "files", "./plugins/files")
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	hp := startHostProc(t, dir)
	pids := pluginPIDs(t, hp.url, key)
	for name, want := range map[string]map[string]bool{
		"files":  {"OPENTOOL_FILES_ROOT": true, "OPENTOOL_FAULTY_TOKEN": false},
		"faulty": {"OPENTOOL_FILES_ROOT": false, "OPENTOOL_FAULTY_TOKEN": true},
	} {
		env := environ(t, pids[name])
		for k, v := range env {
			if strings.Contains(v, key) || k == "OPENTOOL_API_KEYS" || k == "SOME_HOST_SECRET" {
				t.Errorf("plugin %s got %s=%s", name, k, v)
			}
		}
		for k, has := range want {
			if _, ok := env[k]; ok != has {
				t.Errorf("plugin %s: has %s = %v, want %v", name, k, ok, has)
			}
		}
		if env["PATH"] == "" || env["OPENTOOL_PLUGIN"] == "" {
			t.Errorf("plugin %s lacks PATH or go-plugin's cookie: %v", name, env)
		}
	}
}

// TestSlowBodyCutOff: clients that trickle a request body are cut off at
// --read-timeout instead of holding a connection forever.
func TestSlowBodyCutOff(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir, "--read-timeout", "1s")
	addr := strings.TrimPrefix(hp.url, "http://")
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- slowClient(addr)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// slowClient sends headers promising 100 bytes, then one byte every 200
// ms, and returns nil once the server has closed the connection (or
// answered with an error status), an error if it is still open after 10 s.
func slowClient(addr string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /opentool/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 512)
	for time.Now().Before(deadline) {
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := conn.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				if _, err := conn.Write([]byte(" ")); err != nil {
					return nil // cut off
				}
				continue
			}
			return nil // closed by the server
		} else {
			return nil // answered (an error status) and closed
		}
	}
	return fmt.Errorf("slow client still connected after 10 s")
}

// rss returns a process's resident set size in bytes.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestLargeResultsLeaveNoMemory: eight 50 MiB results at once are each
// refused under the default cap (16 MiB) without being buffered; eight
// 12 MiB results are served; and the host's memory comes back to within
// 2x of its idle size.
func TestLargeResultsLeaveNoMemory(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "rogue", "./testkit/plugins/rogue")
	hp := startHostProc(t, dir)
	pid := hp.cmd.Process.Pid
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"ok","id":1}`); m["error"] != nil {
		t.Fatalf("ok: %v", m)
	}
	idle := rss(t, pid)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"big","params":{"mb":50},"id":1}`)
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != -32603.0 || !strings.Contains(fmt.Sprint(e["message"]), "larger than the limit of 16777216 bytes") {
				t.Errorf("big: %v", m)
			}
		}()
	}
	wg.Wait()
	peak := rss(t, pid)
	// Results under the cap are served, and their buffers are not kept.
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"big","params":{"mb":12},"id":1}`)
			if r, _ := m["result"].(map[string]any); r == nil || len(fmt.Sprint(r["data"])) != 12<<20 {
				t.Errorf("big 12 MiB: no result")
			}
		}()
	}
	wg.Wait()
	served := rss(t, pid)
	var last int64
	testkit.Eventually(t, 60*time.Second, "host RSS back within 2x of idle", func() bool {
		last = rss(t, pid)
		return last <= 2*idle
	})
	t.Logf("host RSS: idle %.1f MiB, after 8 x 50 MiB results refused %.1f MiB, after 8 x 12 MiB results served %.1f MiB, then %.1f MiB", mib(idle), mib(peak), mib(served), mib(last))
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// TestClientThatDoesNotReadIsCutOff: a client that asks for a large
// result and never reads it is cut off at --write-timeout: the host closes
// its side of the connection (and frees the response) although the client
// has read nothing.
func TestClientThatDoesNotReadIsCutOff(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "rogue", "./testkit/plugins/rogue")
	hp := startHostProc(t, dir, "--write-timeout", "1s")
	pid := hp.cmd.Process.Pid
	idle := sockets(t, pid)
	conn, err := net.Dial("tcp", strings.TrimPrefix(hp.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	body := `{"jsonrpc":"2.0","method":"big","params":{"mb":12},"id":1}`
	fmt.Fprintf(conn, "POST /opentool/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	testkit.Eventually(t, 10*time.Second, "the host accepted the connection", func() bool { return sockets(t, pid) == idle+1 })
	start := time.Now()
	testkit.Eventually(t, 20*time.Second, "the host closed the connection of a client that does not read", func() bool { return sockets(t, pid) == idle })
	t.Logf("host closed the connection %v after accepting it (--write-timeout 1s); the client read nothing", time.Since(start).Round(10*time.Millisecond))
}

// sockets counts the sockets a process has open.
func sockets(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
