package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestStatusPageInBrowser runs webtest/statuspage.test.js in headless
// Chromium (playwright-core, Debian's chromium) against the real host
// serving calculator and mock behind an API key: the page asks for the
// key, lists both plugins, shows calculator's restart live (from
// /events) after the script SIGKILLs its process, runs "try it" on add
// (2 + 3 = 5) and on divide by 0 (the tool's error), shows a plugin's
// markup as text, and takes a screenshot into the test's artifact dir
// (go test -artifacts keeps it). With OPENTOOL_STATUS_SCREENSHOT=PATH the
// screenshot is also written to PATH, relative to the repository
// (docs/status-page.png).
//
// It skips, saying why, when chromium or playwright-core is missing
// (make deps-browser installs both).
func TestStatusPageInBrowser(t *testing.T) {
	chromium := os.Getenv("CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("browser test: no Chromium at %s (make deps-browser installs Debian's chromium): %v", chromium, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("browser test: no node on PATH (install Node.js >= 20, then make deps-browser)")
	}
	web := filepath.Join(testkit.RepoRoot(t), "webtest")
	if out, err := exec.Command(node, "-e", `require(require.resolve("playwright-core", {paths: [process.argv[1]]}))`, web).CombinedOutput(); err != nil {
		t.Skipf("browser test: playwright-core not installed in %s (make deps-browser runs npm ci there): %v %s", web, err, firstLine(out))
	}

	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	const key = "status-page-key"
	hp := startHostProc(t, dir, "--api-key", key)

	out := t.ArtifactDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(web, "statuspage.test.js"))
	cmd.Dir = web
	cmd.Env = append(os.Environ(), "BASE_URL="+hp.url, "API_KEY="+key, "OUT_DIR="+out, "CHROMIUM="+chromium)
	if shot := os.Getenv("OPENTOOL_STATUS_SCREENSHOT"); shot != "" {
		if !filepath.IsAbs(shot) {
			shot = filepath.Join(testkit.RepoRoot(t), shot) // relative to the repository
		}
		cmd.Env = append(cmd.Env, "SCREENSHOT="+shot)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	stdout, err := cmd.Output()
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	for sc.Scan() {
		t.Log(sc.Text())
	}
	if err != nil {
		t.Fatalf("statuspage.test.js after %v: %v\n%s", time.Since(start).Round(time.Millisecond), err, stderr.String())
	}
	if !strings.Contains(string(stdout), "\nok ") {
		t.Fatalf("statuspage.test.js did not finish:\n%s\n%s", stdout, stderr.String())
	}
	png, err := os.ReadFile(filepath.Join(out, "status-page.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("browser test took %v; screenshot %s (%d bytes)", time.Since(start).Round(time.Millisecond), filepath.Join(out, "status-page.png"), len(png))
}
