package e2e_test

// make install end to end: the host and both plugin SDKs installed into a
// temporary HOME's ~/.local (the default PREFIX), then the Python and the
// Node example plugins served from a folder outside the checkout by the
// installed opentool-host, as a user who copied the templates would.

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// installTool is what make install needs beside a language's runtime and
// SDK packages (langPlugin.missing): the installer it runs.
var installTool = map[string][]string{
	"python": {pyInterpreter, "-m", "pip", "--version"},
	"node":   {"npm", "--version"},
}

// TestMakeInstallServesPluginsOutsideTheCheckout runs make install with
// PREFIX=$HOME/.local (a temporary HOME) and serves copies of the Python and
// Node templates from a t.TempDir() with the installed host: each plugin
// imports the installed SDK (pip's user site, ~/.local/lib/node_modules)
// and answers a call. The same install serves a HOME without it when the
// host passes PYTHONUSERBASE and NODE_PATH (--plugin-env), as make install
// says for another PREFIX; with neither, each plugin's start fails saying
// to run make install.
func TestMakeInstallServesPluginsOutsideTheCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: make install builds the host")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	var langs []langPlugin
	for _, lp := range langPlugins {
		why := lp.missing(t)
		if out, err := exec.Command(installTool[lp.lang][0], installTool[lp.lang][1:]...).CombinedOutput(); why == "" && err != nil {
			why = strings.Join(installTool[lp.lang], " ") + ": " + err.Error() + " " + firstLine(out)
		}
		if why != "" {
			t.Logf("%s: not installed here: %s", lp.lang, why)
			continue
		}
		langs = append(langs, lp)
	}
	if len(langs) == 0 {
		t.Skip("neither the Python nor the Node plugin SDK can run here (see the log)")
	}

	home := t.TempDir()
	prefix := filepath.Join(home, ".local")
	out, err := makeInstall(t, home, prefix)
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	t.Logf("make install:\n%s", out)
	bin := filepath.Join(prefix, "bin", "opentool-host")

	dir := t.TempDir() // outside the checkout: no ../pluginsdk beside it
	for _, lp := range langs {
		for _, f := range []string{"opentool-plugin-" + lp.name, lp.name + ".policy.json"} {
			testkit.CopyFile(t, filepath.Join(testkit.RepoRoot(t), "plugins", f), filepath.Join(dir, f), 0o755)
		}
	}
	prefixes := map[string]string{"python": "py_", "node": "node_"}
	callEach := func(t *testing.T, hp *hostProc) {
		for _, lp := range langs {
			r, e := langCall(t, hp.url, prefixes[lp.lang]+"echo", `{"text":"installed"}`)
			if e != nil || r["echo"] != "installed" {
				t.Errorf("%s: %secho: result %v, error %v", lp.lang, prefixes[lp.lang], r, e)
			}
		}
	}

	t.Run("default prefix", func(t *testing.T) {
		callEach(t, startHostProcAs(t, hostLaunch{bin: bin, env: pluginTestEnv(home)}, dir, "serving:"))
	})
	t.Run("plugin-env", func(t *testing.T) {
		env := append(pluginTestEnv(t.TempDir()), "PYTHONUSERBASE="+prefix, "NODE_PATH="+filepath.Join(prefix, "lib", "node_modules"))
		callEach(t, startHostProcAs(t, hostLaunch{bin: bin, env: env}, dir, "serving:",
			"--plugin-env", "PYTHONUSERBASE", "--plugin-env", "NODE_PATH"))
	})
	t.Run("not installed", func(t *testing.T) {
		hp := startHostProcAs(t, hostLaunch{bin: bin, env: pluginTestEnv(t.TempDir())}, dir, "serving:")
		for _, lp := range langs {
			want := map[string]string{"python": "the Python SDK opentool_plugin is not installed", "node": "the Node SDK opentool-plugin is not installed"}[lp.lang]
			if logs := hp.logs.String(); !strings.Contains(logs, want) || !strings.Contains(logs, "run `make install`") {
				t.Errorf("%s: the host's log does not say %q ... run `make install`:\n%s", lp.lang, want, logs)
			}
		}
	})
}

// makeInstall runs make install PREFIX=prefix in the checkout with HOME
// set to home, the Go caches and settings kept as they are (a new HOME
// would otherwise mean a cold build cache and no module cache), and
// returns its output.
func makeInstall(t *testing.T, home, prefix string) ([]byte, error) {
	t.Helper()
	env := pluginTestEnv(home)
	for _, v := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "GOTOOLCHAIN", "GOPROXY"} {
		val, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		env = append(env, v+"="+strings.TrimSpace(string(val)))
	}
	cmd := exec.Command("make", "--no-print-directory", "-C", testkit.RepoRoot(t), "install", "PREFIX="+prefix)
	cmd.Env = env
	return cmd.CombinedOutput()
}

// pluginTestEnv is the test's environment with HOME set to home and
// without what would choose an SDK for the plugins or the build
// (PYTHONUSERBASE, NODE_PATH, OPENTOOL_*, GOFLAGS: the Makefile sets its
// own -modfile).
func pluginTestEnv(home string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "HOME" || k == "PYTHONUSERBASE" || k == "NODE_PATH" || k == "GOFLAGS" || strings.HasPrefix(k, "OPENTOOL_")
	})
	return append(env, "HOME="+home)
}
