package kubernetes

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
	testbase "github.com/opentool-host/opentool-host/testkit/base"
)

// TestDeploymentRunsTheHost runs the real host with the Deployment's
// arguments, the Secret's keys file and the ConfigMap's declarations next
// to the plugins they declare, as the pod would (paths and addresses
// moved to a temp folder and loopback): every declared plugin gets ready,
// the API wants a key, the metrics port does not, the probes' paths
// answer kubelet (no key), and SIGTERM drains as the grace period
// expects.
func TestDeploymentRunsTheHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a host process")
	}
	b := load(t)
	c := ctr(b)
	tmp := t.TempDir()
	dirs := map[string]string{}
	for _, name := range []string{"plugins", "keys", "state", "tmp"} {
		dirs[name] = filepath.Join(tmp, name)
		if err := os.Mkdir(dirs[name], 0o755); err != nil {
			t.Fatal(err)
		}
	}

	// The image's plugins, and the ConfigMap's files beside them.
	cm := pluginsConfigMap(b)
	var plugins []string
	for name, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(dirs["plugins"], name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if p, ok := strings.CutSuffix(name, decl.PolicySuffix); ok {
			if _, err := os.Stat(filepath.Join(testkit.RepoRoot(t), "plugins", p)); err != nil {
				t.Fatalf("ConfigMap key %s: no example plugin %s in the repository (and so none in the image): %v", name, p, err)
			}
			testkit.InstallPlugin(t, dirs["plugins"], p, "./plugins/"+p)
			plugins = append(plugins, p)
		}
	}
	if len(plugins) == 0 {
		t.Fatal("the ConfigMap declares no policy of an example plugin; the test has nothing to start")
	}

	// The keys file as kubelet writes it from the Secret.
	keysFile, _ := arg(c.Args, "--api-keys-file")
	var secretName string
	for _, v := range b.deploy.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secretName = v.Secret.SecretName
		}
	}
	if err := os.WriteFile(filepath.Join(dirs["keys"], filepath.Base(keysFile)), b.secrets[secretName].Data[filepath.Base(keysFile)], 0o440); err != nil {
		t.Fatal(err)
	}

	addr, metricsAddr := testkit.FreeAddr(t), testkit.FreeAddr(t)
	args := moveArgs(c.Args, map[string]string{
		"--dir":           dirs["plugins"],
		"--api-keys-file": filepath.Join(dirs["keys"], filepath.Base(keysFile)),
		"--state-dir":     dirs["state"],
		"--addr":          addr,
		"--metrics-addr":  metricsAddr,
	})
	var logs testkit.SyncBuffer
	cmd := exec.Command(testkit.Build(t, "./cmd/opentool-host"), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + dirs["tmp"]}
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("host output:\n%s", logs.String())
		}
	})

	// Every declared plugin ready, read where Prometheus would: the
	// metrics port, without a key.
	testkit.Eventually(t, 30*time.Second, "every declared plugin ready on "+metricsAddr, func() bool {
		m, err := get("http://" + metricsAddr + "/metrics")
		if err != nil || m.code != http.StatusOK {
			return false
		}
		for _, p := range plugins {
			if !strings.Contains(m.body, fmt.Sprintf(`opentool_plugin_state{plugin=%q,state="ready"} 1`, p)) {
				return false
			}
		}
		return true
	})
	// The keys are in force: the API refuses a request without one.
	if r, err := get("http://" + addr + "/opentool/version"); err != nil || r.code != http.StatusUnauthorized {
		t.Errorf("GET /opentool/version without a key: %+v %v, want 401 (the Secret's keys file in force)", r, err)
	}
	// What kubelet's probes get: it sends no key. Readiness says
	// "starting" until the host's start of every plugin has returned
	// (frontdoor.Readiness.SetStarting), a moment after the metrics show
	// each plugin ready: each probe is given until then.
	for what, p := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe, "startupProbe": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		var last string
		_, perr := testbase.Poll(10*time.Second, 10*time.Millisecond, func() bool {
			r, err := get("http://" + addr + p.HTTPGet.Path)
			last = fmt.Sprintf("%d %.200s %v", r.code, r.body, err)
			return err == nil && r.code == http.StatusOK
		})
		if perr != nil {
			t.Errorf("%s: GET %s without a key, every plugin ready: %s, want 200 within 10 s", what, p.HTTPGet.Path, last)
		}
	}

	// SIGTERM, as kubelet sends it after preStop: readiness turns 503
	// "draining" at once while requests are still served, for
	// --drain-delay; then the host is gone within --shutdown-timeout (the
	// grace period's shares, see faults).
	drain, err := durationArg(c.Args, "--drain-delay", defaultDrainDelay)
	if err != nil {
		t.Fatal(err)
	}
	shutdown, err := durationArg(c.Args, "--shutdown-timeout", defaultShutdownTimeout)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, drain/2, "readiness 503 draining after SIGTERM", func() bool {
		r, err := get("http://" + addr + readinessPath)
		return err == nil && r.code == http.StatusServiceUnavailable && strings.Contains(r.body, "draining")
	})
	if r, err := get("http://" + addr + "/opentool/version"); err != nil || r.code != http.StatusUnauthorized {
		t.Errorf("GET /opentool/version while draining: %+v %v, want it still served (401 without a key)", r, err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		took := time.Since(start)
		if err != nil {
			t.Errorf("host after SIGTERM: %v, want exit status 0", err)
		}
		if took < drain {
			t.Errorf("host stopped %v after SIGTERM, before --drain-delay %v", took, drain)
		}
		t.Logf("host stopped %v after SIGTERM (--drain-delay %v, --shutdown-timeout %v)", took.Round(time.Millisecond), drain, shutdown)
	case <-time.After(drain + shutdown):
		t.Errorf("host still running %v after SIGTERM", drain+shutdown)
	}
}

// moveArgs returns args with the value of each flag of to replaced.
func moveArgs(args []string, to map[string]string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		name, _, eq := strings.Cut(args[i], "=")
		v, ok := to[name]
		switch {
		case !ok:
			out = append(out, args[i])
		case eq:
			out = append(out, name+"="+v)
		default:
			out = append(out, name, v)
			i++
		}
	}
	return out
}

// response is a status code and a body.
type response struct {
	code int
	body string
}

// get GETs url without credentials, as kubelet and Prometheus do.
func get(url string) (response, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	r, err := c.Get(url)
	if err != nil {
		return response{}, err
	}
	defer r.Body.Close()
	var body bytes.Buffer
	_, err = body.ReadFrom(bufio.NewReader(r.Body))
	return response{r.StatusCode, body.String()}, err
}
