package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// The keys of the access e2e tests. calcKey is in the file only as its
// sha256.
const (
	adminKey   = "admin-7f3e9c1d-plain"
	calcKey    = "calc-2b8a44f0-hashed"
	limitedKey = "limited-91cc06e2-plain"
	nothingKey = "nothing-5d1fa7b3-plain"
)

func hexSHA(k string) string {
	s := sha256.Sum256([]byte(k))
	return hex.EncodeToString(s[:])
}

// accessFile is the keys file of the tests: calc-user sees the
// calculator plugin and count (hashed key), limited sees add at 1 call/s
// with bursts of 3, nothing sees nothing.
func accessFile() string {
	return `{"keys": [
  {"name": "calc-user", "sha256": "` + hexSHA(calcKey) + `", "allow": ["plugin:calc*", "count"]},
  {"name": "limited", "key": "` + limitedKey + `", "allow": ["add"], "rate": {"per_second": 1, "burst": 3}},
  {"name": "nothing", "key": "` + nothingKey + `", "allow": []}
]}`
}

// httpDo sends one request with key and returns status, headers and body.
func httpDo(t *testing.T, method, url, key, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// listed returns every function name each listing shows key, sorted:
// /opentool/load, /otc/tools, /opentool/export (openai) and MCP
// tools/list.
func listed(t *testing.T, hp *hostProc, key string, cs *mcp.ClientSession) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	names := func(front, path string, pick func([]byte) []string) {
		st, _, body := httpDo(t, http.MethodGet, hp.url+path, key, "")
		if st != http.StatusOK {
			t.Fatalf("%s: %d %s", path, st, body)
		}
		n := pick([]byte(body))
		slices.Sort(n)
		out[front] = n
	}
	names("load", "/opentool/load", func(b []byte) (n []string) {
		var doc struct{ Functions []struct{ Name string } }
		_ = json.Unmarshal(b, &doc)
		for _, f := range doc.Functions {
			n = append(n, f.Name)
		}
		return n
	})
	names("otc", "/otc/tools", func(b []byte) (n []string) {
		var l struct{ Tools []struct{ Name string } }
		_ = json.Unmarshal(b, &l)
		for _, f := range l.Tools {
			n = append(n, f.Name)
		}
		return n
	})
	names("export", "/opentool/export?format=openai", func(b []byte) (n []string) {
		var l []struct{ Name string }
		_ = json.Unmarshal(b, &l)
		for _, f := range l {
			n = append(n, f.Name)
		}
		return n
	})
	out["mcp"] = toolNames(t, cs)
	return out
}

// connectMCP opens an MCP client session on /mcp with key.
func connectMCP(t *testing.T, url, key string) *mcp.ClientSession {
	t.Helper()
	cs, err := dialMCP(t, url, key)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

// mcpCall calls tool name and returns the result or the protocol error.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

// TestAccessPerKey: with --api-keys-file each key sees and calls only its
// functions on every front end; a forbidden function is answered exactly
// like an unknown one; the hashed key works; no key or key hash reaches
// the host's log.
func TestAccessPerKey(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keysFile, []byte(accessFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-key", adminKey, "--api-keys-file", keysFile)

	calc := []string{"add", "count", "divide", "multiply", "subtract"}
	all := listed(t, hp, adminKey, connectMCP(t, hp.url, adminKey))["load"]
	if len(all) < 10 || !slices.Contains(all, "create") {
		t.Fatalf("admin sees %v", all)
	}
	for key, want := range map[string][]string{adminKey: all, calcKey: calc, nothingKey: nil} {
		cs := connectMCP(t, hp.url, key)
		for front, got := range listed(t, hp, key, cs) {
			if !slices.Equal(got, want) {
				t.Errorf("key %s, %s lists %v, want %v", key[:8], front, got, want)
			}
		}
	}
	// /health shows only the plugins the key may call a function of.
	if pids := pluginPIDs(t, hp.url, calcKey); len(pids) != 2 || pids["mock"] == 0 {
		t.Errorf("calc-user /health: %v", pids) // count is mock's
	}
	if pids := pluginPIDs(t, hp.url, nothingKey); len(pids) != 0 {
		t.Errorf("nothing /health: %v", pids)
	}

	// Calls: allowed ones run, on every front end.
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", calcKey, `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":"1"}`); st != 200 || body != `{"jsonrpc":"2.0","result":{"result":3},"id":"1"}` {
		t.Errorf("calc-user add: %d %s", st, body)
	}
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/otc/call", calcKey, `{"request":{"call_id":"c","tool_id":"Calculator.add","input":{"a":2,"b":3}}}`); st != 200 || !strings.Contains(body, `"success":true`) {
		t.Errorf("calc-user otc add: %d %s", st, body)
	}
	csCalc := connectMCP(t, hp.url, calcKey)
	if res, err := mcpCall(t, csCalc, "add", map[string]any{"a": 2, "b": 5}); err != nil || res.IsError {
		t.Errorf("calc-user MCP add: %+v %v", res, err)
	}

	// A forbidden function (create, sequentiallyRead: mock's) is answered
	// byte for byte like an unknown one (the name aside).
	same := func(what string, forbidden, unknown string, fName, uName string) {
		t.Helper()
		if forbidden != strings.ReplaceAll(unknown, uName, fName) {
			t.Errorf("%s: forbidden and unknown differ:\nforbidden %s\nunknown   %s", what, forbidden, unknown)
		}
	}
	for _, ep := range []string{"/opentool/call", "/opentool/streamCall"} {
		for _, fn := range []string{"create", "sequentiallyRead"} {
			req := func(name string) (int, string, string) {
				st, h, body := httpDo(t, http.MethodPost, hp.url+ep, calcKey, `{"jsonrpc":"2.0","method":"`+name+`","params":{"text":"x"},"id":7}`)
				return st, h.Get("Content-Type") + " " + h.Get("Content-Length"), body
			}
			fs, fh, fb := req(fn)
			us, uh, ub := req("zz" + fn)
			if fs != us || fh != strings.ReplaceAll(uh, "zz", "") && len(fn) == len("zz"+fn) {
				t.Errorf("%s %s: status/headers %d %q vs unknown %d %q", ep, fn, fs, fh, us, uh)
			}
			same(ep+" "+fn, fb, ub, fn, "zz"+fn)
			if !strings.Contains(fb, `"code":-32601`) {
				t.Errorf("%s %s: %s", ep, fn, fb)
			}
		}
	}
	// A near miss is answered with the function meant, among those the
	// key may call only: calc-user's "creat" names none (create is mock's),
	// the admin's names create.
	for _, tc := range []struct{ key, fn, want string }{
		{calcKey, "Add", `did you mean \"add\"?`}, {calcKey, "substract", `did you mean \"subtract\"?`},
		{calcKey, "creat", `function \"creat\" is not served"`}, {adminKey, "creat", `did you mean \"create\"?`},
	} {
		_, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", tc.key, `{"jsonrpc":"2.0","method":"`+tc.fn+`","params":{},"id":8}`)
		if !strings.Contains(body, tc.want) || !strings.Contains(body, `"code":-32601`) {
			t.Errorf("key %s calls %s: %s, want %s", tc.key[:8], tc.fn, body, tc.want)
		}
	}
	durationRE := regexp.MustCompile(`"duration":[0-9.]+,`)
	for _, id := range []string{"CRUDAPIForMock.create", "CRUDAPIForMock.create@9.9", "CRUDAPIForMock.create@latest"} {
		otcCall := func(toolID string) string {
			st, _, body := httpDo(t, http.MethodPost, hp.url+"/otc/call", calcKey, `{"request":{"call_id":"c1","tool_id":"`+toolID+`","input":{"text":"x"}}}`)
			return http.StatusText(st) + " " + durationRE.ReplaceAllString(body, "")
		}
		same("otc "+id, otcCall(id), otcCall(strings.Replace(id, "create", "zzcreate", 1)), "CRUDAPIForMock.create", "CRUDAPIForMock.zzcreate")
	}
	_, ferr := mcpCall(t, csCalc, "create", map[string]any{"text": "x"})
	_, uerr := mcpCall(t, csCalc, "zzcreate", map[string]any{"text": "x"})
	var fe, ue *jsonrpc.Error
	if !errors.As(ferr, &fe) || !errors.As(uerr, &ue) {
		t.Fatalf("MCP forbidden %v, unknown %v: want JSON-RPC errors", ferr, uerr)
	}
	fj, _ := json.Marshal(fe)
	uj, _ := json.Marshal(ue)
	same("MCP tools/call", string(fj), string(uj), "create", "zzcreate")

	// Nothing ran: the mock's count is still its initial 2 for the admin.
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", adminKey, `{"jsonrpc":"2.0","method":"count","id":"n"}`); st != 200 || !strings.Contains(body, `"count":2`) {
		t.Errorf("admin count after forbidden creates: %d %s", st, body)
	}

	// Reload: the file changes (replaced by rename, then SIGHUP too);
	// nothing may now call divide, and a broken file keeps the keys.
	reloads := func() int { return strings.Count(hp.logs.String(), "api keys file reloaded") }
	n := reloads()
	replaceFile(t, keysFile, strings.Replace(accessFile(), `"allow": []`, `"allow": ["divide"]`, 1))
	testkit.Eventually(t, 10*time.Second, "reload after the file changed", func() bool { return reloads() > n })
	if got := listed(t, hp, nothingKey, connectMCP(t, hp.url, nothingKey)); !slices.Equal(got["load"], []string{"divide"}) || !slices.Equal(got["mcp"], []string{"divide"}) {
		t.Errorf("after reload nothing sees %v", got)
	}
	replaceFile(t, keysFile, `{"keys":[{"name":"x","key":"k","allow":["*"],"rate":{"per_second":-1}}]}`)
	if err := hp.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the broken file's fault in the log", func() bool {
		return strings.Contains(hp.logs.String(), "$.keys[0].rate.per_second: must be a number above 0")
	})
	if got := listed(t, hp, nothingKey, connectMCP(t, hp.url, nothingKey))["otc"]; !slices.Equal(got, []string{"divide"}) {
		t.Errorf("a broken file changed the keys: %v", got)
	}

	logs := hp.logs.String()
	for _, secret := range []string{adminKey, calcKey, limitedKey, nothingKey, hexSHA(calcKey), hexSHA(adminKey), hexSHA(limitedKey)} {
		if strings.Contains(strings.ToLower(logs), strings.ToLower(secret)) {
			t.Errorf("the host log shows a key or its hash (%s...)", secret[:8])
		}
	}
	if !strings.Contains(logs, "calc-user") || !strings.Contains(logs, `key_names="api-key-1,calc-user,limited,nothing"`) {
		t.Errorf("the log does not name the keys")
	}
}

// replaceFile writes body to path through a rename, as editors do.
func replaceFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

// TestAccessRateLimit: one limiter per key across front ends; over it,
// HTTP 429 + Retry-After and the documented errors; the key recovers
// after the limiter's own wait; listings and MCP initialize take tokens too.
func TestAccessRateLimit(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keysFile, []byte(accessFile()), 0o600); err != nil {
		t.Fatal(err)
	}
	// Stateless /mcp: a session's connect costs one token more (the
	// client's server/discover, a request like any other).
	hp := startHostProc(t, dir, "--api-keys-file", keysFile, "--mcp-stateless")
	cs := connectMCP(t, hp.url, limitedKey)
	call := `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":1},"id":"r"}`
	otcCall := `{"request":{"call_id":"r","tool_id":"Calculator.add","input":{"a":1,"b":1}}}`

	// The burst of 3: MCP's initialize takes one (every request does),
	// then one call on MCP and one on /opentool/call.
	if res, err := mcpCall(t, cs, "add", map[string]any{"a": 1, "b": 1}); err != nil || res.IsError {
		t.Fatalf("MCP call: %v %v", res, err)
	}
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", limitedKey, call); st != 200 {
		t.Fatalf("OpenTool call: %d %s", st, body)
	}
	// Over the limit, on every front end.
	_, err := mcpCall(t, cs, "add", map[string]any{"a": 1, "b": 1})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != -32000 || je.Message != "rate limited: too many calls for this API key" || !strings.Contains(string(je.Data), `"retry_after_ms":`) {
		t.Errorf("MCP over the limit: %v", err)
	}
	st, h, body := httpDo(t, http.MethodPost, hp.url+"/otc/call", limitedKey, otcCall)
	if st != http.StatusTooManyRequests || h.Get("Retry-After") != "1" ||
		!regexp.MustCompile(`^\{"\$schema":"[^"]+","call_id":"r","success":false,"output":\{"error":\{"message":"rate limited: too many calls for this API key","can_retry":true,"retry_after_ms":[0-9]+\}\}\}$`).MatchString(body) {
		t.Errorf("otc over the limit: %d Retry-After %q %s", st, h.Get("Retry-After"), body)
	}
	st, h, body = httpDo(t, http.MethodPost, hp.url+"/opentool/call", limitedKey, call)
	m := regexp.MustCompile(`^\{"jsonrpc":"2.0","result":\{\},"error":\{"code":-32000,"message":"rate limited: too many calls for this API key","data":\{"retry_after_ms":([0-9]+)\}\},"id":"r"\}$`).FindStringSubmatch(body)
	if st != http.StatusTooManyRequests || h.Get("Retry-After") != "1" || m == nil {
		t.Fatalf("call over the limit: %d Retry-After %q %s", st, h.Get("Retry-After"), body)
	}
	// Listings take tokens too.
	if st, h, body := httpDo(t, http.MethodGet, hp.url+"/opentool/load", limitedKey, ""); st != http.StatusTooManyRequests || h.Get("Retry-After") != "1" {
		t.Errorf("load while limited: %d %s, want 429", st, body)
	}
	// Wait what the limiter said (at most 1 s at 1 call/s), then the key
	// is served again.
	var wait time.Duration
	if err := json.Unmarshal([]byte(m[1]), &wait); err != nil {
		t.Fatal(err)
	}
	wait *= time.Millisecond
	if wait <= 0 || wait > time.Second {
		t.Fatalf("retry_after_ms %v, want within (0, 1 s] at 1 call/s", wait)
	}
	time.Sleep(wait)
	if st, _, body := httpDo(t, http.MethodPost, hp.url+"/opentool/call", limitedKey, call); st != 200 {
		t.Errorf("after the wait: %d %s", st, body)
	}
	if !strings.Contains(hp.logs.String(), "key=limited") {
		t.Error("the rate-limit log line does not name the key")
	}
}

// TestAccessBadKeysFileRefused: a malformed keys file stops the host at
// start with exit status 2 and the fault's JSON path.
func TestAccessBadKeysFileRefused(t *testing.T) {
	bin := testkit.Build(t, "./cmd/opentool-host")
	for body, want := range map[string]string{
		`{"keys":[{"name":"a","key":"k","allow":["add"]},{"name":"b","key":"k2","allow":["plugin:"]}]}`: `$.keys[1].allow[0]: "plugin:" needs a plugin name or glob`,
		`{"keys":[{"name":"a","key":"k","key":"k2","allow":[]}]}`:                                       "$.keys[0].key: duplicate member",
		`{"keys":[{"name":"a","key":"k","allow":[],"rate":{"per_sec":1}}]}`:                             "$.keys[0].rate.per_sec: unknown member",
	} {
		f := filepath.Join(t.TempDir(), "keys.json")
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, "run", "--dir", t.TempDir(), "--addr", testkit.FreeAddr(t), "--state-dir", t.TempDir(), "--api-keys-file", f).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), want) {
			t.Errorf("%s: %v\n%s\nwant exit 2 and %q", body, err, out, want)
		}
	}
}
