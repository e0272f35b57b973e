package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/access/oauth/oauthtest"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestOAuthResourceServer (issue 45): a host with --oauth-issuer of an
// in-process authorization server serves RFC 9728 metadata to anyone,
// challenges a request without a credential with resource_metadata,
// grants a token by its scope on every front end (MCP through the Go
// SDK's client, OpenTool, OTC), refuses an expired token (401) and one
// no rule grants (403 insufficient_scope), keeps API keys working, writes
// the principal into the audit log, and never hands the token to a
// plugin (environment, command line), a command tool's command or a log.
func TestOAuthResourceServer(t *testing.T) {
	is := oauthtest.New(t)
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	if err := os.WriteFile(filepath.Join(dir, "dump.tools.json"), []byte(`{"functions":[{"name":"dump_env","description":"Prints its environment.","command":["env"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const adminKey = "oauth-admin-4c1d9e"
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	rules := `{"keys": [{"name": "admin", "key": "` + adminKey + `", "allow": ["*"]}],
 "tokens": [
   {"name": "calc-users", "scopes": ["calc"], "allow": ["plugin:calculator", "dump_env"]},
   {"name": "admins", "claims": {"groups": "admin"}, "allow": ["*"]}
 ]}`
	if err := os.WriteFile(keysFile, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	hp := startHostProc(t, dir, "--api-keys-file", keysFile, "--oauth-issuer", is.URL, "--audit-log", audit)
	resource := hp.url + "/mcp"
	token := func(extra map[string]any) string {
		c := map[string]any{"iss": is.URL, "sub": "alice", "aud": resource, "client_id": "agent", "scope": "calc",
			"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return is.Token(t, c)
	}
	calcToken := token(nil)

	// Metadata, both paths, no credential.
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		st, _, body := httpDo(t, http.MethodGet, hp.url+p, "", "")
		var m map[string]any
		_ = json.Unmarshal([]byte(body), &m)
		if st != 200 || m["resource"] != resource || fmt.Sprint(m["authorization_servers"]) != "["+is.URL+"]" ||
			fmt.Sprint(m["scopes_supported"]) != "[calc]" || fmt.Sprint(m["bearer_methods_supported"]) != "[header]" || m["resource_name"] != "opentool-host" {
			t.Errorf("GET %s: %d %s", p, st, body)
		}
	}
	meta := `resource_metadata="` + hp.url + `/.well-known/oauth-protected-resource/mcp"`
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	for _, tc := range []struct {
		name, bearer string
		status       int
		header       string
	}{
		{"no credential", "", 401, `Bearer ` + meta + `, scope="calc"`},
		{"expired", token(map[string]any{"exp": time.Now().Add(-time.Minute).Unix()}), 401,
			`Bearer ` + meta + `, scope="calc", error="invalid_token", error_description="the token expired"`},
		{"another audience", token(map[string]any{"aud": "http://127.0.0.1:1/mcp"}), 401, ""},
		{"no scope granted", token(map[string]any{"scope": "other"}), 403, `Bearer error="insufficient_scope", scope="calc", ` + meta},
	} {
		for _, p := range []string{"/mcp", "/opentool/load", "/otc/tools"} {
			method, body := http.MethodGet, ""
			if p == "/mcp" {
				method, body = http.MethodPost, init
			}
			st, h, _ := httpDo(t, method, hp.url+p, tc.bearer, body)
			if st != tc.status || (tc.header != "" && h.Get("WWW-Authenticate") != tc.header) || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer ") {
				t.Errorf("%s, %s: %d WWW-Authenticate: %s", tc.name, p, st, h.Get("WWW-Authenticate"))
			}
		}
	}

	// The token's grant on every front end.
	cs := connectMCP(t, hp.url, calcToken)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"add", "divide", "dump_env", "multiply", "subtract"}) {
		t.Errorf("MCP tools/list with the calc token: %v", got)
	}
	if res, err := mcpCall(t, cs, "add", map[string]any{"a": 2, "b": 5}); err != nil || res.IsError {
		t.Errorf("MCP add: %+v %v", res, err)
	}
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", calcToken, `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":"1"}`); st != 200 || body != `{"jsonrpc":"2.0","result":{"result":3},"id":"1"}` {
		t.Errorf("OpenTool add: %d %s", st, body)
	}
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/otc/call", calcToken, `{"request":{"call_id":"c","tool_id":"Calculator.add","input":{"a":2,"b":3}}}`); st != 200 || !strings.Contains(body, `"success":true`) {
		t.Errorf("OTC add: %d %s", st, body)
	}
	st, m := rpcKey(t, hp.url, calcToken, `{"jsonrpc":"2.0","method":"dump_env","params":{},"id":2}`)
	res, _ := m["result"].(map[string]any)
	out, _ := res["stdout"].(string)
	if st != 200 || !strings.Contains(out, "PATH=") {
		t.Fatalf("dump_env: %d %v", st, m)
	}
	if st, _, _ := httpDo(t, http.MethodGet, hp.url+"/opentool/load", adminKey, ""); st != 200 {
		t.Errorf("the API key beside tokens: %d", st)
	}

	// No token passthrough: not in a plugin's environment or command
	// line, a command's environment, the host's log or the audit log.
	sig := strings.Split(calcToken, ".")[2]
	pid := pluginPIDs(t, hp.url, adminKey)["calculator"]
	if pid == 0 {
		t.Fatal("calculator not running")
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	for where, text := range map[string]string{"the plugin's command line": string(cmdline), "the command's environment": out} {
		if strings.Contains(text, sig) {
			t.Errorf("the token is in %s", where)
		}
	}
	for k, v := range environ(t, pid) {
		if strings.Contains(v, sig) {
			t.Errorf("the token is in the plugin's environment: %s", k)
		}
	}
	principal := "oauth:alice@" + strings.TrimPrefix(is.URL, "http://")
	var line map[string]any
	testkit.Eventually(t, 10*time.Second, "an audit line of the token's principal", func() bool {
		b, _ := os.ReadFile(audit)
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			var l map[string]any
			if json.Unmarshal(sc.Bytes(), &l) == nil && l["key"] == principal {
				line = l
				return true
			}
		}
		return false
	})
	if p, _ := line["principal"].(map[string]any); p["iss"] != is.URL || p["sub"] != "alice" || p["client_id"] != "agent" {
		t.Errorf("audit line: %v", line)
	}
	b, _ := os.ReadFile(audit)
	if strings.Contains(string(b), sig) || strings.Contains(hp.logs.String(), sig) {
		t.Error("the token is in the audit log or the host's log")
	}
}
