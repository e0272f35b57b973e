package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// ctWrite writes a NAME.tools.json declaration into dir.
func ctWrite(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".tools.json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ctProcs returns the pids whose command line contains marker.
func ctProcs(marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), marker) {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err == nil && !zombieOrGone(pid) {
			out = append(out, pid)
		}
	}
	return out
}

const ctDecl = `{"description":"test tools","functions":[
 {"name":"argv","description":"Prints each argument followed by NUL.",
  "parameters":[{"name":"a","schema":{"type":"string"},"required":true},{"name":"b","schema":{"type":"string"},"required":false}],
  "command":["sh","-c","printf '%s\\000' \"$@\"","argv0","{a}","--b={b}"]},
 {"name":"fail","description":"Fails with a message on stderr.",
  "command":["sh","-c","echo boom on stderr >&2; exit 3"]},
 {"name":"hang","description":"Starts a child and hangs.",
  "command":["sh","-c","sleep 3007 & sleep 3008"],"timeout_ms":500},
 {"name":"flood","description":"Writes too much.",
  "command":["sh","-c","yes flood"],"max_output_bytes":10000},
 {"name":"json","description":"Prints a JSON object.",
  "parameters":[{"name":"x","schema":{"type":"integer"},"required":true}],
  "command":["sh","-c","printf '{\"x\": %s}' \"$1\"","argv0","{x}"],"output":"json"},
 {"name":"count","description":"Counts stdin's words.",
  "parameters":[{"name":"text","schema":{"type":"string"},"required":true}],
  "command":["wc","-w"],"stdin":"text"}]}`

func TestCommandToolsNoShellInjection(t *testing.T) {
	dir := t.TempDir()
	ctWrite(t, dir, "ct", ctDecl)
	hp := startHostProc(t, dir)

	hostile := []string{"a b  c", `"quoted" 'single'`, "x; touch /tmp/ct-pwned", "$(touch /tmp/ct-pwned)", "`id`", "line1\nline2", "--help", "-rf", "*", ""}
	for i, v := range hostile {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"argv","params":{"a":%q,"b":%q},"id":%d}`, v, v, i)
		_, m := rpc(t, hp.url, body)
		res, _ := m["result"].(map[string]any)
		out, _ := res["stdout"].(string)
		args := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
		if len(args) != 2 || args[0] != v || args[1] != "--b="+v {
			t.Errorf("argument %q reached the command as %q (%v)", v, args, m)
		}
	}
	if _, err := os.Stat("/tmp/ct-pwned"); err == nil {
		os.Remove("/tmp/ct-pwned")
		t.Fatal("an argument was run by a shell")
	}
	// An absent optional parameter leaves its element out.
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"argv","params":{"a":"only"},"id":20}`)
	if got := m["result"].(map[string]any)["stdout"]; got != "only\x00" {
		t.Errorf("absent b: stdout %q", got)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"count","params":{"text":"one two three"},"id":21}`)
	if got := m["result"].(map[string]any)["stdout"]; strings.TrimSpace(got.(string)) != "3" {
		t.Errorf("stdin: wc -w said %q", got)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"json","params":{"x":7},"id":22}`)
	if fmt.Sprint(m["result"]) != "map[x:7]" {
		t.Errorf("json output = %v", m)
	}
	// Arguments are validated by the host first: a command never sees
	// an undeclared parameter.
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"argv","params":{"a":"x","c":"y"},"id":23}`)
	if !strings.Contains(fmt.Sprint(m["error"]), "-32602") {
		t.Errorf("undeclared parameter: %v", m)
	}
}

func TestCommandToolsFailuresAndLimits(t *testing.T) {
	dir := t.TempDir()
	ctWrite(t, dir, "ct", ctDecl)
	hp := startHostProc(t, dir)

	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"fail","id":1}`)
	if e := fmt.Sprint(m["error"]); !strings.Contains(e, "code:500") || !strings.Contains(e, "status 3") || !strings.Contains(e, "boom on stderr") {
		t.Errorf("non-zero exit: %v", m)
	}
	start := time.Now()
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"hang","id":2}`)
	if e := fmt.Sprint(m["error"]); !strings.Contains(e, "did not finish within 500ms") {
		t.Errorf("hang: %v", m)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hang took %v with a 500 ms timeout", d)
	}
	testkit.Eventually(t, 5*time.Second, "the command and its child are gone", func() bool {
		return len(ctProcs("sleep 3007")) == 0 && len(ctProcs("sleep 3008")) == 0
	})
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"flood","id":3}`)
	if e := fmt.Sprint(m["error"]); !strings.Contains(e, "more than 10000 bytes") {
		t.Errorf("flood: %v", m)
	}
	testkit.Eventually(t, 5*time.Second, "yes is gone", func() bool { return len(ctProcs("yes flood")) == 0 })
	// The plugin itself kept serving.
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"count","params":{"text":"a b"},"id":4}`)
	if m["result"] == nil {
		t.Errorf("count after failures: %v", m)
	}
}

func TestCommandToolsExampleAndHotReload(t *testing.T) {
	dir := t.TempDir()
	testkit.CopyFile(t, filepath.Join(testkit.RepoRoot(t), "plugins", "text.tools.json"), filepath.Join(dir, "text.tools.json"), 0o644)
	hp := startHostProc(t, dir)
	_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"grep_lines","params":{"pattern":"^B","text":"a\nBee\nbee","ignore_case":true},"id":1}`)
	if got := fmt.Sprint(m["result"].(map[string]any)["stdout"]); got != "Bee\nbee\n" {
		t.Errorf("grep_lines = %v", m)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"grep_lines","params":{"pattern":"zzz","text":"a"},"id":2}`)
	if m["result"] == nil {
		t.Errorf("grep without a match (exit 1) is a result: %v", m)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"utc_date","params":{"format":"-s 2001-01-01"},"id":3}`)
	if m["error"] == nil {
		t.Errorf("a format that is an option was not refused by date: %v", m)
	}
	_, m = rpc(t, hp.url, `{"jsonrpc":"2.0","method":"utc_date","params":{"format":"+%Y"},"id":4}`)
	if got := fmt.Sprint(m["result"].(map[string]any)["stdout"]); len(strings.TrimSpace(got)) != 4 {
		t.Errorf("utc_date +%%Y = %v", m)
	}
	// Edit the declaration: the new function is served (blue/green).
	ctWrite(t, dir, "text", `{"functions":[{"name":"shout","description":"Upper-cases stdin.","parameters":[{"name":"t","schema":{"type":"string"},"required":true}],"command":["tr","a-z","A-Z"],"stdin":"t"}]}`)
	testkit.Eventually(t, 15*time.Second, "shout served after the edit", func() bool {
		_, m := rpc(t, hp.url, `{"jsonrpc":"2.0","method":"shout","params":{"t":"hi"},"id":5}`)
		r, _ := m["result"].(map[string]any)
		return r != nil && r["stdout"] == "HI"
	})
}
