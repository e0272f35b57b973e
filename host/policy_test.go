package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/decl"
	"github.com/opentool-host/opentool-host/testkit"
)

// writePolicy writes dir/NAME.policy.json through a rename, as a careful
// deploy would (the watcher then sees one complete file).
func writePolicy(t *testing.T, dir, name, body string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.CopyFile(t, tmp, filepath.Join(dir, name+".policy.json"), 0o644)
}

// envOf returns the environment plugin function fn (faulty's "env")
// reports.
func envOf(t *testing.T, h *host.Host, fn string) map[string]any {
	t.Helper()
	env, _ := call(t, h, fn, `{}`)["env"].(map[string]any)
	return env
}

// TestPolicyPrefixTimeoutConcurrencyEnvSecrets runs two copies of the
// faulty plugin, one with a policy: its functions are served with the
// policy's prefix, its calls bounded by the policy's timeout and
// concurrency, and only it receives the policy's variables and secrets,
// whose values appear in no log line and not in /health.
func TestPolicyPrefixTimeoutConcurrencyEnvSecrets(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	testkit.InstallPlugin(t, dir, "other", "./testkit/plugins/faulty")
	const fileSecret, envSecret = "s3cr3t-from-a-file", "s3cr3t-from-the-host-env"
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POLICY_TEST_DB", envSecret)
	writePolicy(t, dir, "faulty", `{"prefix": "f_", "timeout_ms": 1500, "max_concurrency": 2,
		"env": {"PLAIN": "plain-value"},
		"secrets": {"TOKEN": "files-token", "DB_URL": "db"}}`)
	rec := newLogRecorder(t)
	// The operator declares the secrets and grants them to faulty; the
	// policy names them.
	declared := map[string]decl.Secret{"files-token": {File: filepath.Join(dir, "token"), Plugins: []string{"faulty"}}, "db": {Env: "POLICY_TEST_DB", Plugins: []string{"faulty"}}}
	h := startHost(t, dir, func(c *core.Config) { c.Watch = true; c.Logger = rec.logger; c.Secrets = declared })

	if st := pluginStatus(h, "faulty").Policy; st == nil || st.TimeoutMS != 1500 || st.MaxConcurrency != 2 || strings.Join(st.Secrets, ",") != "DB_URL,TOKEN" || strings.Join(st.Env, ",") != "PLAIN" {
		t.Errorf("/health policy: %+v", st)
	}
	env := envOf(t, h, "f_env")
	if env["TOKEN"] != fileSecret || env["DB_URL"] != envSecret || env["PLAIN"] != "plain-value" {
		t.Errorf("the plugin with the policy lacks its variables: TOKEN=%v DB_URL=%v PLAIN=%v", env["TOKEN"], env["DB_URL"], env["PLAIN"])
	}
	if _, ok := env["POLICY_TEST_DB"]; ok {
		t.Error("the host variable a secret is read from reached the plugin")
	}
	for k, v := range envOf(t, h, "env") {
		if k == "TOKEN" || k == "DB_URL" || k == "PLAIN" || v == fileSecret || v == envSecret {
			t.Errorf("plugin other got %s=%v", k, v)
		}
	}
	if h.Function("env") == nil || h.Function("f_env") == nil || h.Function("f_f_env") != nil {
		t.Errorf("served names: env %v, f_env %v", h.Function("env") != nil, h.Function("f_env") != nil)
	}

	// The policy's timeout (1.5 s, the host's is 10 s) ends a 3 s sleep.
	_, err := h.Call(context.Background(), "f_sleep", []byte(`{"ms":3000}`))
	var he *core.Error
	if !errors.As(err, &he) || he.Kind != core.KindTimeout {
		t.Errorf("f_sleep 3 s under a 1.5 s policy timeout: %v", err)
	}
	// max_concurrency 2: of three 1 s sleeps one waits for a slot and
	// runs out of its 1.5 s.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.Call(context.Background(), "f_sleep", []byte(`{"ms":1000}`))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	var queued int
	for err := range errs {
		if err != nil {
			if !errors.As(err, &he) || he.Kind != core.KindTimeout {
				t.Errorf("unexpected error: %v", err)
			}
			queued++
		}
	}
	if queued != 1 {
		t.Errorf("%d of 3 sleeps timed out waiting for one of 2 slots, want 1", queued)
	}

	// Changing the policy restarts the plugin with the new one.
	writePolicy(t, dir, "faulty", `{"prefix": "g_"}`)
	testkit.Eventually(t, 10*time.Second, "g_env served after the policy changed", func() bool {
		return h.Function("g_env") != nil && h.Function("f_env") == nil
	})
	if env := envOf(t, h, "g_env"); env["TOKEN"] != nil {
		t.Error("a secret of the previous policy survived the change")
	}

	if st := pluginStatus(h, "faulty"); st.Policy == nil || st.Policy.Prefix != "g_" || st.Policy.TimeoutMS != 10000 {
		t.Errorf("/health policy: %+v", st.Policy)
	}
	health, _ := json.Marshal(h.Plugins())
	for _, line := range append(rec.all(), string(health)) {
		if strings.Contains(line, fileSecret) || strings.Contains(line, envSecret) {
			t.Fatalf("a secret value was logged or shown: %s", line)
		}
	}
}

// TestPolicyThatAsksForMoreIsRefused: a policy may only narrow the host's
// settings; one that asks for more, or cannot be read, fails its plugin
// with the member's JSON path while the others serve.
func TestPolicyThatAsksForMoreIsRefused(t *testing.T) {
	for _, c := range []struct{ policy, want string }{
		{`{"timeout_ms": 600000}`, "policy faulty.policy.json: $.timeout_ms: 600000 ms exceeds the host's call timeout of 10000 ms"},
		{`{"max_concurrency": 1000}`, "policy faulty.policy.json: $.max_concurrency: 1000 exceeds the host's 64"},
		{`{"limits": {"memory_mb": 8192}}`, "policy faulty.policy.json: $.limits.memory_mb: 8589934592 bytes exceeds the host's limit of 4294967296 bytes"},
		{`{"limits": {"memory": 1}}`, "policy faulty.policy.json:1:13: $.limits.memory: unknown member"},
		{`{"secrets": {"T": "missing"}}`, "secret T: read "},
		// A drop-in policy cannot read the host's keys or a file for the
		// plugin: it may only name what the operator declared.
		{`{"secrets": {"STOLEN_KEYS": {"env": "OPENTOOL_API_KEYS"}}}`, `$.secrets.STOLEN_KEYS: a policy names a secret the operator declared on the host`},
		{`{"secrets": {"SHADOW": {"file": "/etc/shadow"}}}`, `$.secrets.SHADOW: a policy names a secret the operator declared on the host`},
		{`{"secrets": {"KEYS": "keys-file"}}`, `$.secrets.KEYS: names secret "keys-file", which the host does not declare`},
		// A declared secret reaches only the plugins it is granted to.
		{`{"secrets": {"T": "calc-token"}}`, `policy faulty.policy.json: $.secrets.T: names secret "calc-token", which the operator did not grant to plugin faulty (the operator grants it with --secret-for calc-token=faulty)`},
		{`{"secrets": {"T": "ungranted"}}`, `names secret "ungranted", which the operator did not grant to plugin faulty`},
	} {
		t.Run(c.want[:min(len(c.want), 40)], func(t *testing.T) {
			dir := t.TempDir()
			testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
			testkit.InstallPlugin(t, dir, "calc", "./plugins/calculator")
			writePolicy(t, dir, "faulty", c.policy)
			// A 4 GiB address-space ceiling for every plugin: the launcher
			// applies it (a Go plugin reserves about 2 GiB).
			launcher := []string{testkit.Build(t, "./cmd/opentool-host"), "launch"}
			h := startHost(t, dir, func(cfg *core.Config) {
				cfg.Sandbox.MemoryBytes, cfg.Launcher = 4<<30, launcher
				cfg.Secrets = map[string]decl.Secret{"missing": {File: filepath.Join(dir, "missing"), Plugins: []string{"faulty"}},
					"calc-token": {Env: "HOME", Plugins: []string{"calc"}}, "ungranted": {Env: "HOME"}}
			})
			testkit.Eventually(t, 10*time.Second, "faulty marked failed", func() bool {
				return pluginStatus(h, "faulty").State == core.StateFailed
			})
			if st := pluginStatus(h, "faulty"); !strings.Contains(st.LastError, c.want) {
				t.Errorf("last error %q, want it to hold %q", st.LastError, c.want)
			}
			if r := call(t, h, "add", `{"a":1,"b":2}`); r["result"] != 3.0 {
				t.Errorf("calculator: %v", r)
			}
		})
	}
}

// TestSecretGrantsInConfig: New refuses a secret granted to what is no
// plugin name, and logs each secret granted to no plugin (no policy can
// name it), once, at start.
func TestSecretGrantsInConfig(t *testing.T) {
	_, err := host.New(core.Config{Dir: t.TempDir(), StateDir: t.TempDir(),
		Secrets: map[string]decl.Secret{"db": {Env: "DB", Plugins: []string{"files", "../x"}}}})
	if err == nil || !strings.Contains(err.Error(), `secret db.plugins[1]: "../x" is not a plugin name`) {
		t.Errorf("New with a grant to ../x: %v", err)
	}
	rec := newLogRecorder(t)
	startHost(t, t.TempDir(), func(c *core.Config) {
		c.Logger = rec.logger
		c.Secrets = map[string]decl.Secret{"spare": {Env: "HOME"}, "db": {Env: "HOME", Plugins: []string{"files"}}}
	})
	var warned []string
	for _, line := range rec.all() {
		if strings.Contains(line, "secret is granted to no plugin") {
			warned = append(warned, line)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "secret=spare") || !strings.Contains(warned[0], "--secret-for NAME=PLUGIN") {
		t.Errorf("the warnings for secrets granted to no plugin: %q", warned)
	}
}
