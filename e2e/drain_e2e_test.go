package e2e_test

import (
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// readiness gets GET /health?ready=1 without a key over a fresh
// connection: the status code and body.
func readiness(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url + "/health?ready=1")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSIGTERMDrainDelay: on SIGTERM readiness answers 503 draining at
// once (without a key) while calls are still served, each with
// Connection: close, for --drain-delay; a second SIGTERM ends the delay.
// SIGINT skips it.
func TestSIGTERMDrainDelay(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
		hp := startHostProc(t, dir, "--api-key", "k", "--drain-delay", "1m")
		if code, body := readiness(t, hp.url); code != 200 || body != `{"status":"ready"}` {
			t.Fatalf("readiness before %v: %d %s", sig, code, body)
		}
		sent := time.Now()
		if err := hp.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if sig == syscall.SIGTERM {
			testkit.Eventually(t, 5*time.Second, "readiness 503 draining after SIGTERM", func() bool {
				code, body := readiness(t, hp.url)
				return code == 503 && body == `{"status":"draining"}`
			})
			req, _ := http.NewRequest(http.MethodPost, hp.url+"/opentool/call", strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer k")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("call while draining: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"result":{"result":3}`) || !resp.Close {
				t.Fatalf("call while draining: %d %s, Connection: close %v", resp.StatusCode, b, resp.Close)
			}
			select {
			case <-hp.done:
				t.Fatalf("exited %v after SIGTERM, within --drain-delay 1m", time.Since(sent))
			default:
			}
			if err := hp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-hp.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: no exit within 10 s (the 1m drain delay not skipped)", sig)
		}
		if code := hp.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%v: exit code %d", sig, code)
		}
		t.Logf("%v: exited %v after the first signal", sig, time.Since(sent).Round(time.Millisecond))
	}
}

// TestSIGTERMIdleExitsAtOnce: an idle host run without --drain-delay
// (the default: no load balancer reads its readiness) exits 0 on SIGTERM
// well within 2 s, and its log says nothing of draining.
func TestSIGTERMIdleExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir)
	sent := time.Now()
	if err := hp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hp.done:
	case <-time.After(2 * time.Second):
		t.Fatalf("no exit within 2 s of SIGTERM (the drain delay is not off by default)")
	}
	if code := hp.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	<-hp.logged
	if log := hp.logs.String(); strings.Contains(log, "draining: readiness") || strings.Contains(log, "drain_delay") {
		t.Errorf("a host without --drain-delay drained before it stopped:\n%s", log)
	}
	t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
}
