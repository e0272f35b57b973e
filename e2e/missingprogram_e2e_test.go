package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestMissingProgramFailsAtLoad: a NAME.tools.json or NAME.mcp.json whose
// program is not installed (a bare name in no folder of the plugin's
// PATH, or a relative path that does not exist) fails its plugin at the
// host's start, named in /health's last_error; the log also names the
// folders searched; no answer a caller gets (/health, a call) holds a
// folder of the host's PATH; `validate` exits 1 naming the program and
// the folders.
func TestMissingProgramFailsAtLoad(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker-bin") // a folder of the host's PATH
	if err := os.Mkdir(marker, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", os.Getenv("PATH")+string(os.PathListSeparator)+marker)
	dir := t.TempDir()
	ctWrite(t, dir, "ft", `{"functions":[{"name":"frob","description":"Frobnicates.","command":["frobnicate","x"]}]}`)
	ctWrite(t, dir, "rel", `{"functions":[{"name":"rel","description":"Runs a missing file.","command":["./bin/nothere"]}]}`)
	if err := os.WriteFile(filepath.Join(dir, "fm.mcp.json"), []byte(`{"mcpServers":{"fm":{"command":"frobnicate-mcp","args":["serve"]}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir)

	want := map[string]string{
		"ft":  `the plugin's program "frobnicate" is not installed`,
		"rel": `the plugin's program "./bin/nothere" does not exist`,
		"fm":  `the plugin's program "frobnicate-mcp" is not installed`,
	}
	h := healthOf(t, hp.url)
	for name, msg := range want {
		if st := h[name]; st.State != "failed" || !strings.Contains(st.LastError, msg) {
			t.Errorf("%s: state %q, last_error %q; want failed with %q", name, st.State, st.LastError, msg)
		}
	}
	resp, err := http.Get(hp.url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), marker) {
		t.Errorf("/health shows a folder of the host's PATH:\n%s", body)
	}
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"frob","params":{},"id":1}`)
	if b, _ := json.Marshal(m); strings.Contains(string(b), marker) || m["error"] == nil {
		t.Errorf("a call's answer shows a folder of the host's PATH, or no error: %s", b)
	}
	logs := hp.logs.String()
	for _, w := range []string{"declared plugin's program cannot run", `program \"frobnicate\"`, `program \"frobnicate-mcp\"`, marker, filepath.Join(dir, "bin", "nothere")} {
		if !strings.Contains(logs, w) {
			t.Errorf("the host's log lacks %q", w)
		}
	}

	bin := testkit.Build(t, "./cmd/opentool-host")
	for _, f := range []string{"ft.tools.json", "fm.mcp.json", "rel.tools.json"} {
		out, err := exec.Command(bin, "validate", filepath.Join(dir, f)).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("validate %s: %v, want exit 1\n%s", f, err, out)
		}
		if f != "rel.tools.json" && !strings.Contains(string(out), marker) || !strings.Contains(string(out), "the plugin's program") {
			t.Errorf("validate %s does not name the program and the folders searched:\n%s", f, out)
		}
	}
}
