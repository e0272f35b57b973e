package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestDropInPolicyCannotReadHostSecrets: a NAME.policy.json in the
// plugins folder can no longer hand its plugin the host's API keys, a
// file such as /etc/shadow or the keys file (issue 21, finding 1): such a
// policy fails its plugin with the JSON path of the fault, shown in
// /health, and nothing of the host reaches the plugin. Secrets the
// operator declared (--secret) reach the plugin whose policy names them,
// and the commands of a NAME.tools.json too.
func TestDropInPolicyCannotReadHostSecrets(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "thief", "./testkit/plugins/faulty")
	testkit.InstallPlugin(t, dir, "granted", "./testkit/plugins/faulty")
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[{"name":"admin","key":"admin-key","allow":["*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("thief.policy.json", `{"prefix":"thief_","secrets":{"STOLEN_KEYS":{"env":"OPENTOOL_API_KEYS"},"SHADOW":{"file":"/etc/shadow"},"KEYS":{"file":"`+keys+`"}}}`)
	write("granted.policy.json", `{"prefix":"granted_","secrets":{"DB_PASSWORD":"db"}}`)
	// A command-line tool whose policy grants the same secret prints it.
	write("cmds.tools.json", `{"functions":[{"name":"show_secret","description":"Prints DB_PASSWORD.","parameters":[],"command":["sh","-c","printf %s \"$DB_PASSWORD\""]}]}`)
	write("cmds.policy.json", `{"secrets":{"DB_PASSWORD":"db"}}`)
	secretFile := filepath.Join(t.TempDir(), "db-password")
	if err := os.WriteFile(secretFile, []byte("s3cr3t-db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENTOOL_API_KEYS", "")
	hp := startHostProc(t, dir, "--api-keys-file", keys, "--api-key", "plain-admin-key", "--secret", "db=file:"+secretFile)

	testkit.Eventually(t, 20*time.Second, "thief failed with the fault's path", func() bool {
		_, _, body := httpDo(t, http.MethodGet, hp.url+"/health", "admin-key", "")
		return strings.Contains(body, `$.secrets.KEYS: a policy names a secret the operator declared on the host`)
	})
	_, _, health := httpDo(t, http.MethodGet, hp.url+"/health", "admin-key", "")
	for _, leak := range []string{"plain-admin-key", "root:", "admin-key\""} {
		if strings.Contains(health, leak) {
			t.Errorf("/health shows %q", leak)
		}
	}
	if _, m := rpcKey(t, hp.url, "admin-key", `{"jsonrpc":"2.0","method":"thief_env","id":1}`); m["error"] == nil {
		t.Errorf("the thief plugin serves: %v", m)
	}
	_, m := rpcKey(t, hp.url, "admin-key", `{"jsonrpc":"2.0","method":"granted_env","id":1}`)
	env, _ := m["result"].(map[string]any)["env"].(map[string]any)
	if env["DB_PASSWORD"] != "s3cr3t-db" {
		t.Errorf("the declared secret did not reach the plugin whose policy names it: %v", m)
	}
	for k, v := range env {
		if s, _ := v.(string); strings.Contains(s, "plain-admin-key") || strings.HasPrefix(k, "OPENTOOL_API") {
			t.Errorf("the host's keys reached a plugin: %s", k)
		}
	}
	_, m = rpcKey(t, hp.url, "admin-key", `{"jsonrpc":"2.0","method":"show_secret","id":1}`)
	if out, _ := m["result"].(map[string]any)["stdout"].(string); out != "s3cr3t-db" {
		t.Errorf("the command of a tools.json did not get its granted secret: %v", m)
	}
	if strings.Contains(hp.logs.String(), "s3cr3t-db") {
		t.Error("a secret value was logged")
	}
}

// rpcKey posts a JSON-RPC call to /opentool/call with key.
func rpcKey(t *testing.T, url, key, body string) (int, map[string]any) {
	t.Helper()
	st, _, b := httpDo(t, http.MethodPost, url+"/opentool/call", key, body)
	var m map[string]any
	_ = json.Unmarshal([]byte(b), &m)
	return st, m
}

// TestHostSecretsCannotBeDeclared: the operator cannot declare the host's
// own variables or files as secrets either: run refuses to start (exit
// 2) saying why.
func TestHostSecretsCannotBeDeclared(t *testing.T) {
	keys := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keys, []byte(`{"keys":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testkit.Build(t, "./cmd/opentool-host")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--secret", "k=env:OPENTOOL_API_KEYS"}, "OPENTOOL_API_KEYS is the host's own variable and can never be a plugin's secret"},
		{[]string{"--secret", "k=env:OPENTOOL_API_KEYS_FILE"}, "is the host's own variable"},
		{[]string{"--api-keys-file", keys, "--secret", "k=file:" + keys}, "is the host's own file and can never be a plugin's secret"},
		{[]string{"--secret", "k"}, "want NAME=env:VAR or NAME=file:PATH"},
		{[]string{"--secret", "k=env:A", "--secret", "k=env:B"}, "declared twice"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		args := append([]string{"run", "--dir", t.TempDir(), "--addr", testkit.FreeAddr(t), "--state-dir", t.TempDir()}, c.args...)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("run %v: %v\n%s\nwant exit 2 and %q", c.args, err, out, c.want)
		}
	}
}

// procUID returns the real uid of pid (/proc/PID/status).
func procUID(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
			return f[1]
		}
	}
	t.Fatal("no Uid line")
	return ""
}

// TestPluginUser: with --plugin-user, a root host runs its plugins as
// that user (here nobody, uid 65534), Go plugins and the commands of a
// declaration alike, and they serve (issue 21).
func TestPluginUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("--plugin-user needs the host to run as root; this test runs as uid " + strconv.Itoa(os.Geteuid()))
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	if err := os.WriteFile(filepath.Join(dir, "who.tools.json"), []byte(`{"functions":[{"name":"whoami","description":"The user id.","parameters":[],"command":["id","-u"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The plugin user must traverse to the state folder: t.TempDir's
	// folders are 0700 (the default, $TMPDIR/opentool-host, is under a
	// world-traversable /tmp).
	state := t.TempDir()
	if err := os.Chmod(filepath.Dir(state), 0o711); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--plugin-user", "65534", "--state-dir", state)
	pids := pluginPIDs(t, hp.url)
	// who's commands run per call, in no process of the plugin's own.
	if uid := procUID(t, pids["calculator"]); uid != "65534" {
		t.Errorf("calculator runs as uid %s, want 65534", uid)
	}
	if _, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"add","params":{"a":2,"b":3},"id":1}`); m["result"] == nil {
		t.Errorf("add as nobody: %v", m)
	}
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"whoami","id":1}`)
	if out, _ := m["result"].(map[string]any)["stdout"].(string); strings.TrimSpace(out) != "65534" {
		t.Errorf("a command of a declaration ran as %q, want 65534: %v", out, m)
	}
	if procUID(t, hp.cmd.Process.Pid) != "0" {
		t.Error("the host itself changed user")
	}
}
