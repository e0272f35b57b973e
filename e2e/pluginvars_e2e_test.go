package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestPluginVariableReachesOnePlugin (issue 43, finding 4): a variable
// OPENTOOL__<PLUGIN>__VAR reaches one plugin only. my-files is served;
// my_files, MY-FILES and My_Files, dropped in beside it, have its
// variable key (OPENTOOL__MY_FILES__) and are refused, in the log and in
// /health, so OPENTOOL__MY_FILES__TOKEN reaches my-files alone. The key
// ends at the first "__": OPENTOOL__DB__CONN__URL is db's, and a file
// db__conn.tools.json is no plugin (no name holds "__").
func TestPluginVariableReachesOnePlugin(t *testing.T) {
	dir := t.TempDir()
	tool := func(name, fn string) {
		t.Helper()
		body := `{"functions":[{"name":"` + fn + `","description":"Prints its environment.","parameters":[],"command":["env"]}]}`
		if err := os.WriteFile(filepath.Join(dir, name+".tools.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tool("my-files", "a_env")
	tool("db", "db_env")
	tool("db__conn", "conn_env")
	t.Setenv("OPENTOOL__MY_FILES__TOKEN", "for-my-files")
	t.Setenv("OPENTOOL__DB__CONN__URL", "for-db")
	hp := startHostProc(t, dir)
	tool("my_files", "b_env")
	tool("MY-FILES", "c_env")
	tool("My_Files", "d_env")
	testkit.Eventually(t, 20*time.Second, "/health lists the three newcomers as refused", func() bool {
		_, _, body := httpDo(t, http.MethodGet, hp.url+"/health", "", "")
		return strings.Count(body, "has the variable key of plugin my-files") == 3
	})
	envOf := func(fn string) (string, bool) {
		_, m := rpcKey(t, hp.url, "", fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":{},"id":1}`, fn))
		res, ok := m["result"].(map[string]any)
		out, _ := res["stdout"].(string)
		return out, ok && m["error"] == nil
	}
	if out, ok := envOf("a_env"); !ok || !strings.Contains(out, "OPENTOOL_MY_FILES_TOKEN=for-my-files\n") {
		t.Errorf("my-files did not get its variable (%v):\n%s", ok, out)
	}
	for _, fn := range []string{"b_env", "c_env", "d_env", "conn_env"} {
		if out, ok := envOf(fn); ok {
			t.Errorf("%s is served:\n%s", fn, out)
		}
	}
	if out, ok := envOf("db_env"); !ok || !strings.Contains(out, "OPENTOOL_DB_CONN__URL=for-db\n") {
		t.Errorf("db did not get OPENTOOL__DB__CONN__URL (%v):\n%s", ok, out)
	}
	if logs := hp.logs.String(); !strings.Contains(logs, "has the variable key of plugin my-files") {
		t.Errorf("no refusal logged:\n%s", logs)
	}
}
