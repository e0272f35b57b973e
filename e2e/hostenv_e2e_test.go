package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// hostSettings are the variables of every flag of the CLI, as the CLI
// reference lists them ("[$OPENTOOL_TASK_STORE]"): TestCLIReferenceIsGenerated
// keeps the reference equal to the flags, so a new flag's variable is here.
func hostSettings(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testkit.RepoRoot(t), "docs", "reference", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`\[\$([A-Z0-9_, $]+)\]`).FindAllStringSubmatch(string(doc), -1) {
		for _, n := range strings.Split(m[1], ",") {
			names = append(names, strings.TrimPrefix(strings.TrimSpace(n), "$"))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// namesOf are the plugin names a variable could be taken for under a
// per-name prefix: OPENTOOL_API_KEYS_FILE gives api, api-keys and
// api-keys-file.
func namesOf(v string) []string {
	parts := strings.Split(strings.ToLower(strings.TrimPrefix(v, "OPENTOOL_")), "_")
	var out []string
	for i := range parts {
		out = append(out, strings.Join(parts[:i+1], "-"))
	}
	return out
}

// TestNoHostSettingReachesAPlugin (issue 30, finding 2): plugins named
// after every host setting (task, api, log, plugin, addr, ...; also the
// variables the host gives the processes it starts, and mcp and tool)
// get none of the host's variables, whether a dropped-in binary or a
// NAME.tools.json (the adapter process and the command it runs). The
// task store is a real Redis with a password, which no plugin sees. A
// variable the operator sets for one plugin (OPENTOOL__TASK__NOTE) reaches
// that plugin only, as OPENTOOL_TASK_NOTE (not task-store, whose
// OPENTOOL__TASK_STORE__NOTE task does not get).
func TestNoHostSettingReachesAPlugin(t *testing.T) {
	const pw, key, fileKey = "redis-pw-7d1e0c", "env-key-5b2a91", "env-file-key-9c3d44"
	store := strings.Replace(testkit.StartRedis(t, "--requirepass", pw), "redis://", "redis://:"+pw+"@", 1)
	dir := t.TempDir()
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keysFile, []byte(`{"keys":[{"name":"env-file","key":"`+fileKey+`","allow":["*"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(t.TempDir(), "introspection-secret")
	if err := os.WriteFile(secretFile, []byte("introspection-pw-3e81"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenKeyFile := filepath.Join(t.TempDir(), "token-key")
	if err := os.WriteFile(tokenKeyFile, []byte("token-key-of-at-least-32-bytes-9f4c2a"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A value for every setting: one the host starts with.
	values := map[string]string{
		"OPENTOOL_ADDR": testkit.FreeAddr(t), "OPENTOOL_API_KEYS": key, "OPENTOOL_API_KEYS_FILE": keysFile,
		"OPENTOOL_LOG_JSON": "false", "OPENTOOL_LOG_LEVEL": "debug", "OPENTOOL_PLUGIN_DIR": dir,
		"OPENTOOL_PLUGIN_TRANSPORT": "auto", "OPENTOOL_TASK_STORE": store,
		"OPENTOOL_OAUTH_ISSUER": "http://127.0.0.1:1", "OPENTOOL_OAUTH_RESOURCE": "http://127.0.0.1:1/mcp",
		"OPENTOOL_OAUTH_INTROSPECTION": "http://127.0.0.1:1/introspect", "OPENTOOL_OAUTH_INTROSPECTION_CLIENT": "rs",
		"OPENTOOL_OAUTH_INTROSPECTION_SECRET_FILE": secretFile, "OPENTOOL_API_KEY": key,
		"OPENTOOL_OAUTH_TOKEN_KEY": "tk", "OPENTOOL_URL": "http://127.0.0.1:1",
	}
	settings := hostSettings(t)
	if len(settings) < len(values) {
		t.Fatalf("the CLI reference lists %v, fewer than the settings this test knows", settings)
	}
	// The variables the host gives its children, and two front ends'
	// names, make plugin names too.
	names := []string{"mcp", "tool", "launch", "granted", "sandbox", "data-fd", "plugin-file"}
	for _, s := range settings {
		v, ok := values[s]
		if !ok {
			t.Fatalf("the CLI reads %s: give it a value in this test", s)
		}
		t.Setenv(s, v)
		names = append(names, namesOf(s)...)
	}
	t.Setenv("OPENTOOL__TASK__NOTE", "for-task-only")
	t.Setenv("OPENTOOL__TASK_STORE__NOTE", "for-task-store-only")
	slices.Sort(names)
	names = slices.Compact(names)
	// task and api are declared command tools (served in the host's
	// process, their commands run per call), the others binaries.
	declared := []string{"task", "api"}
	for _, n := range names {
		if slices.Contains(declared, n) {
			body := `{"functions":[{"name":"` + strings.ReplaceAll(n, "-", "_") + `_env","description":"Prints its environment.","command":["env"]}]}`
			if err := os.WriteFile(filepath.Join(dir, n+".tools.json"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		testkit.InstallPlugin(t, dir, n, "./plugins/calculator")
	}
	hp := startHostProc(t, dir, "--task-store", store, "--prefix-collisions", "--secret", "tk=file:"+tokenKeyFile)
	pids := pluginPIDs(t, hp.url, key)
	leaks := func(who, k, v string) {
		if slices.Contains(settings, k) || strings.Contains(v, pw) || strings.Contains(v, key) || strings.Contains(v, fileKey) || strings.Contains(v, keysFile) ||
			strings.Contains(v, "introspection-pw-3e81") || strings.Contains(v, secretFile) || strings.Contains(v, "token-key-of-at-least") || strings.Contains(v, tokenKeyFile) {
			t.Errorf("%s got the host's %s=%s", who, k, v)
		}
	}
	for _, n := range names {
		if slices.Contains(declared, n) {
			continue // no process of its own: its commands are checked below
		}
		pid := pids[n]
		if pid == 0 {
			t.Fatalf("plugin %s is not running: %v\n%s", n, pids, hp.logs.String())
		}
		env := environ(t, pid)
		for k, v := range env {
			leaks("plugin "+n, k, v)
		}
		if got, want := env["OPENTOOL_TASK_NOTE"], map[bool]string{true: "for-task-only"}[n == "task"]; got != want {
			t.Errorf("plugin %s: OPENTOOL_TASK_NOTE = %q, want %q", n, got, want)
		}
	}
	for _, n := range declared {
		st, m := rpcKey(t, hp.url, key, fmt.Sprintf(`{"jsonrpc":"2.0","method":"%s_env","params":{},"id":1}`, n))
		res, _ := m["result"].(map[string]any)
		out, _ := res["stdout"].(string)
		if st != 200 || !strings.Contains(out, "PATH=") {
			t.Fatalf("%s_env: %d %v", n, st, m)
		}
		for _, line := range strings.Split(out, "\n") {
			k, v, _ := strings.Cut(line, "=")
			leaks("the command of "+n+".tools.json", k, v)
		}
		if has := strings.Contains(out, "OPENTOOL_TASK_NOTE=for-task-only\n"); has != (n == "task") {
			t.Errorf("the command of %s.tools.json: has OPENTOOL_TASK_NOTE = %v\n%s", n, has, out)
		}
	}
}
