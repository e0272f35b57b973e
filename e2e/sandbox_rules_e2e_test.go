package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestSandboxServesShippedPlugins: the plugins folder `make run` serves,
// laid out as in the checkout (examplesFolder), under the host's
// --sandbox alone: every plugin is ready but files, the Python and Node
// examples reading their interpreter and the SDK beside the plugins
// folder by rule, and each calls; files, whose policy asks to read the
// folder above plugins/ (data, not an SDK), fails naming the flag that
// allows it; with that flag all seven are ready.
func TestSandboxServesShippedPlugins(t *testing.T) {
	landlockOrSkip(t)
	for _, lp := range langPlugins {
		if why := lp.missing(t); why != "" {
			t.Skip(why)
		}
		t.Setenv("OPENTOOL__"+strings.ToUpper(lp.name)+"__SDK", "") // found beside the plugins folder, as make run finds it
	}
	dir, _ := examplesFolder(t)
	root := filepath.Dir(dir)

	hp := startHostProc(t, dir, "--sandbox")
	health := healthOf(t, hp.url)
	for _, name := range []string{"mock", "calculator", "notes", "text", "pyecho", "nodeecho"} {
		if st := health[name]; st.State != "ready" {
			t.Errorf("--sandbox: %s is %s: %s", name, st.State, st.LastError)
		}
	}
	wantFiles := "$.sandbox.read[0]: " + root + " is outside what the host's sandbox allows: start the host with --sandbox-read " + root
	if st := health["files"]; st.State != "failed" || !strings.Contains(st.LastError, wantFiles) {
		t.Errorf("--sandbox: files is %s: %q, want failed with %q", st.State, st.LastError, wantFiles)
	}
	for method, want := range map[string]string{"py_echo": `"echo":"hi"`, "node_echo": `"echo":"hi"`, "add": `"result":3`, "word_count": `"result"`} {
		params := `{"text":"hi"}`
		if method == "add" {
			params = `{"a":1,"b":2}`
		}
		if b := callBody(t, hp.url, method, params); !strings.Contains(b, want) {
			t.Errorf("--sandbox: %s: %s", method, b)
		}
	}

	hp2 := startHostProc(t, dir, "--sandbox", "--sandbox-read", root)
	for name, st := range healthOf(t, hp2.url) {
		if st.State != "ready" {
			t.Errorf("--sandbox --sandbox-read %s: %s is %s: %s", root, name, st.State, st.LastError)
		}
	}
	if len(healthOf(t, hp2.url)) != 7 {
		t.Errorf("plugins: %v, want 7", healthOf(t, hp2.url))
	}
	if b := callBody(t, hp2.url, "list_dir", `{"path":"."}`); !strings.Contains(b, `"plugins"`) {
		t.Errorf("files confined to %s: list_dir: %s", root, b)
	}
}

// TestSandboxDeniedReadSaysWhatAllowsIt: a script plugin that reads a
// file outside its sandbox and fails fails naming the file, that the
// sandbox denied it, and the flag that allows it; with that flag the same
// script gets past the read.
func TestSandboxDeniedReadSaysWhatAllowsIt(t *testing.T) {
	landlockOrSkip(t)
	data := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(data, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := "#!/bin/sh\ncat " + data + " >&2 && echo 'read it' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "opentool-plugin-reader"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--sandbox")
	want := "the sandbox denied it reading " + data + ": allow it with --sandbox-read " + data + " on the host"
	if st := healthOf(t, hp.url)["reader"]; !strings.Contains(st.LastError, want) {
		t.Errorf("last_error %q lacks %q", st.LastError, want)
	}
	hp2 := startHostProc(t, dir, "--sandbox", "--sandbox-read", data)
	if st := healthOf(t, hp2.url)["reader"]; strings.Contains(st.LastError, "the sandbox denied it") || !strings.Contains(hp2.logs.String(), "read it") {
		t.Errorf("with --sandbox-read: %q\n%s", st.LastError, hp2.logs.String())
	}
}

// TestSandboxWriteLetsAPolicyGrantWrites: --sandbox-write W is the most a
// policy's sandbox.write may grant: a command of a NAME.tools.json whose
// policy names W/cache writes there under --sandbox; without the flag
// that policy fails naming it; a plugin without such a policy writes
// nothing of W (the flag grants no plugin anything by itself).
func TestSandboxWriteLetsAPolicyGrantWrites(t *testing.T) {
	landlockOrSkip(t)
	w := t.TempDir()
	cache := filepath.Join(w, "cache")
	if err := os.Mkdir(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tools := func(name, file string) string {
		return fmt.Sprintf(`{"functions":[{"name":%q,"description":"Touch a file.","parameters":[],"command":["touch",%q]}]}`, name, file)
	}
	writeFile(t, filepath.Join(dir, "writer.tools.json"), tools("touch_granted", filepath.Join(cache, "granted")))
	writeFile(t, filepath.Join(dir, "writer.policy.json"), fmt.Sprintf(`{"sandbox":{"write":[%q]}}`, cache))
	writeFile(t, filepath.Join(dir, "other.tools.json"), tools("touch_other", filepath.Join(cache, "other")))

	hp := startHostProc(t, dir, "--sandbox", "--sandbox-write", w)
	if b := callBody(t, hp.url, "touch_granted", `{}`); strings.Contains(b, `"error"`) {
		t.Errorf("granted write: %s", b)
	}
	if _, err := os.Stat(filepath.Join(cache, "granted")); err != nil {
		t.Errorf("granted write: %v", err)
	}
	if b := callBody(t, hp.url, "touch_other", `{}`); !strings.Contains(b, "Permission denied") {
		t.Errorf("write without a policy: %s", b)
	}
	if _, err := os.Stat(filepath.Join(cache, "other")); err == nil {
		t.Errorf("a plugin without a policy wrote inside --sandbox-write")
	}

	hp2 := startHostProc(t, dir, "--sandbox")
	want := "$.sandbox.write[0]: " + cache + " is outside what the host's sandbox allows: start the host with --sandbox-write " + cache
	if st := healthOf(t, hp2.url)["writer"]; st.State != "failed" || !strings.Contains(st.LastError, want) {
		t.Errorf("without --sandbox-write: writer is %s: %q, want %q", st.State, st.LastError, want)
	}
}

// TestSandboxNpxServer: an MCP server started by npx (the reference
// server-memory, from the npm registry) runs under --sandbox with npm's
// cache and its data under --sandbox-write (npm_config_cache in its
// declaration, sandbox.write in its policy) and answers a call. The cache
// is kept in bin/npx-cache of the checkout, so only the first run
// downloads (about 15 s, 50 MB). Skipped, with the reason, without npx or
// the registry.
func TestSandboxNpxServer(t *testing.T) {
	landlockOrSkip(t)
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("no npx on PATH: install Node.js with npm")
	}
	cache := filepath.Join(testkit.RepoRoot(t), "bin", "npx-cache")
	if out, err := exec.Command("npm", "view", "--cache", cache, "@modelcontextprotocol/server-memory@2026.8.31", "version").CombinedOutput(); err != nil {
		t.Skipf("npm cannot fetch the server from the registry: npm view: %v %s", err, firstLine(out))
	}
	data := t.TempDir()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "memory.mcp.json"), fmt.Sprintf(`{"mcpServers":{"memory":{"command":"npx","args":["-y","@modelcontextprotocol/server-memory@2026.8.31"],
		"env":{"npm_config_cache":%q,"npm_config_update_notifier":"false","MEMORY_FILE_PATH":%q}}}}`, cache, filepath.Join(data, "memory.jsonl")))
	writeFile(t, filepath.Join(dir, "memory.policy.json"), fmt.Sprintf(`{"sandbox":{"write":[%q,%q]}}`, cache, data))
	hp := startHostProc(t, dir, "--sandbox", "--sandbox-write", cache, "--sandbox-write", data, "--start-timeout", "120s")
	if st := healthOf(t, hp.url)["memory"]; st.State != "ready" {
		t.Fatalf("memory is %s: %s", st.State, st.LastError)
	}
	if !strings.Contains(hp.logs.String(), "plugin.memory: sandbox: Landlock ABI") {
		t.Errorf("npx did not start through the sandbox launcher")
	}
	b := callBody(t, hp.url, "create_entities", `{"entities":[{"name":"sandbox","entityType":"test","observations":["ran confined"]}]}`)
	if !strings.Contains(b, "ran confined") {
		t.Errorf("create_entities: %s", b)
	}
	if _, err := os.Stat(filepath.Join(data, "memory.jsonl")); err != nil {
		t.Errorf("the server's data: %v", err)
	}
}

// writeFile writes text to path, failing the test on error.
func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
