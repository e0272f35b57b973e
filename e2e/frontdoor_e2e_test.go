package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// The request side's guards, tried from outside as a web page in the
// user's browser and a prompt-injected caller would (issue 20, findings
// 1 and 2): every front end refuses the same things.

// send makes one request to the host at base with the given method, path,
// Content-Type (none when ""), Host (the URL's when ""), Origin (none when
// ""), API key (none when "") and body, and returns the status and body.
func send(t *testing.T, base, method, path, ctype, host, origin, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if strings.HasPrefix(path, "/mcp") {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const (
	rpcAddCall = `{"jsonrpc":"2.0","method":"add","params":{"a":5,"b":3},"id":1}`
	otcAddCall = `{"request":{"call_id":"c1","tool_id":"Calculator.add","input":{"a":5,"b":3}}}`
	mcpAddCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":5,"b":3}}}`
)

// TestBrowserBorneCallsRefused: a cross-site "simple" POST (text/plain,
// a form type), a foreign Origin, and a DNS-rebinding Host are refused on
// every route, with and without API keys; the readiness probe answers
// whatever the Host; --allowed-host and --allowed-origin let a reverse
// proxy's names through.
func TestBrowserBorneCallsRefused(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	for _, keyed := range []bool{false, true} {
		name := "no-keys"
		// Stateless /mcp: the raw POSTs below need no session.
		args := []string{"--allowed-host", "tools.example.com", "--allowed-origin", "https://app.example.com", "--mcp-stateless"}
		if keyed {
			name = "keys"
			args = append(args, "--api-key", "k1")
		}
		t.Run(name, func(t *testing.T) {
			hp := startHostProc(t, dir, args...)
			key := ""
			if keyed {
				key = "k1"
			}
			do := func(method, path, ctype, host, origin, body string) (int, string) {
				t.Helper()
				return send(t, hp.url, method, path, ctype, host, origin, key, body)
			}

			// The baseline works: same-origin JSON calls on every front end.
			for _, c := range []struct{ path, body, want string }{
				{"/opentool/call", rpcAddCall, `"result":{"result":8}`},
				{"/otc/call", otcAddCall, `"value":{"result":8}`},
				{"/mcp", mcpAddCall, `"result":8`},
			} {
				if code, body := do("POST", c.path, "application/json", "", "", c.body); code != 200 || !strings.Contains(body, c.want) {
					t.Fatalf("baseline %s: %d %s", c.path, code, body)
				}
			}

			// 1. Simple cross-site POSTs: text/plain and form types.
			for _, path := range []string{"/opentool/call", "/opentool/streamCall", "/otc/call", "/mcp"} {
				body := map[string]string{"/opentool/call": rpcAddCall, "/opentool/streamCall": rpcAddCall, "/otc/call": otcAddCall, "/mcp": mcpAddCall}[path]
				for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
					code, resp := do("POST", path, ct, "", "", body)
					if code != http.StatusUnsupportedMediaType || strings.Contains(resp, `"result":8`) || strings.Contains(resp, `"result":{"result"`) || strings.Contains(resp, `"value"`) {
						t.Errorf("POST %s as %s: %d %s, want 415 and no result", path, ct, code, resp)
					}
					if !json.Valid([]byte(resp)) {
						t.Errorf("POST %s as %s: the refusal is not JSON: %q", path, ct, resp)
					}
				}
			}

			// 2. A foreign Origin, on POST and GET.
			for _, c := range []struct{ method, path, body string }{
				{"POST", "/opentool/call", rpcAddCall}, {"POST", "/otc/call", otcAddCall}, {"POST", "/mcp", mcpAddCall},
				{"GET", "/opentool/load", ""}, {"GET", "/otc/tools", ""}, {"GET", "/health", ""}, {"GET", "/status.json", ""},
			} {
				ct := ""
				if c.method == "POST" {
					ct = "application/json"
				}
				if code, resp := do(c.method, c.path, ct, "", "http://evil.example", c.body); code != http.StatusForbidden || !json.Valid([]byte(resp)) {
					t.Errorf("%s %s with Origin http://evil.example: %d %s, want 403 with a JSON body", c.method, c.path, code, resp)
				}
				if code, resp := do(c.method, c.path, ct, "", "https://app.example.com", c.body); code != http.StatusOK {
					t.Errorf("%s %s with an --allowed-origin: %d %s, want 200", c.method, c.path, code, resp)
				}
				if code, resp := do(c.method, c.path, ct, "", hp.url, c.body); code != http.StatusOK {
					t.Errorf("%s %s with the host's own origin: %d %s, want 200", c.method, c.path, code, resp)
				}
			}

			// 3. DNS rebinding: a name that is not ours in Host.
			port := hp.url[strings.LastIndex(hp.url, ":"):]
			for _, c := range []struct{ method, path, body string }{
				{"GET", "/opentool/load", ""}, {"GET", "/opentool/version", ""}, {"GET", "/otc/tools", ""}, {"GET", "/otc/health", ""},
				{"GET", "/health", ""}, {"GET", "/status.json", ""}, {"GET", "/", ""},
				{"POST", "/opentool/call", rpcAddCall}, {"POST", "/otc/call", otcAddCall}, {"POST", "/mcp", mcpAddCall},
			} {
				ct := ""
				if c.method == "POST" {
					ct = "application/json"
				}
				if code, resp := do(c.method, c.path, ct, "evil.example"+port, "", c.body); code != http.StatusForbidden {
					t.Errorf("%s %s with Host evil.example: %d %.120s, want 403", c.method, c.path, code, resp)
				}
				for _, h := range []string{"localhost" + port, "127.0.0.1" + port, "tools.example.com", "tools.example.com" + port} {
					if code, resp := do(c.method, c.path, ct, h, "", c.body); code != http.StatusOK {
						t.Errorf("%s %s with Host %s: %d %.120s, want 200", c.method, c.path, h, code, resp)
					}
				}
			}

			// The readiness probe answers a kubelet or balancer whatever
			// Host it sends, without a key.
			req, _ := http.NewRequest("GET", hp.url+"/health?ready=1", nil)
			req.Host = "10.1.2.3" + port
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("readiness with a pod IP as Host: %d, want 200", resp.StatusCode)
			}
		})
	}
}

// TestEnvelopesDecodedStrictly: a member given twice, or differing only
// in case, is refused by every protocol's envelope decoder, and nothing
// runs (issue 20, finding 2).
func TestEnvelopesDecodedStrictly(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	hp := startHostProc(t, dir)
	for _, c := range []struct{ path, body, want string }{
		{"/otc/call", `{"request":{"call_id":"c1","tool_id":"Calculator.add","TOOL_ID":"Calculator.subtract","input":{"a":5,"b":3}}}`, `"success":false`},
		{"/otc/call", `{"request":{"call_id":"c1","tool_id":"Calculator.subtract","tool_id":"Calculator.add","input":{"a":5,"b":3}}}`, `"success":false`},
		{"/otc/call", `{"request":{"call_id":"c1","tool_id":"Calculator.add","input":{"a":5,"b":3}},"Request":{"tool_id":"Calculator.subtract"}}`, `"success":false`},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"subtract","arguments":{"a":5,"b":3}}}`, `"code":-32600`},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","METHOD":"tools/list","params":{"name":"subtract","arguments":{"a":5,"b":3}}}`, `"code":-32600`},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","name":"subtract","arguments":{"a":5,"b":3}}}`, `"code":-326`},
		{"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","Name":"subtract","arguments":{"a":5,"b":3}}}`, `"code":-326`},
		{"/opentool/call", `{"jsonrpc":"2.0","method":"add","Method":"subtract","params":{"a":5,"b":3},"id":1}`, `"code":-32600`},
	} {
		code, body := send(t, hp.url, "POST", c.path, "application/json", "", "", "", c.body)
		if !strings.Contains(body, c.want) || strings.Contains(body, `"result":2`) || strings.Contains(body, `"result":8`) {
			t.Errorf("POST %s %s\n -> %d %s\n want %s and nothing run", c.path, c.body, code, body, c.want)
		}
	}
}

// mcpPost posts body to /mcp with key (none when "") and the given
// MCP-Protocol-Version (none when ""), and returns status and body.
func mcpPost(t *testing.T, base, key, version, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// batchOf returns a JSON-RPC batch of n tools/list requests.
func batchOf(n int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/list"}`
	}
	return "[" + strings.Join(items, ",") + "]"
}

// TestMCPBatchesBounded: batches hold at most --max-batch messages, none
// for clients of 2025-06-18 and later, every item takes a rate-limit
// token, and the amplification attack of issue 20 (finding 3: concurrent
// 1.1 MB batches of tools/list) is refused without the host's memory
// growing.
func TestMCPBatchesBounded(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	keysFile := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(keysFile, []byte(`{"keys":[{"name":"admin","key":"admin-key","allow":["*"]},`+
		`{"name":"slow","key":"slow-key","allow":["*"],"rate":{"per_second":0.001,"burst":3}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHostProc(t, dir, "--api-keys-file", keysFile, "--max-batch", "4", "--mcp-stateless")

	if code, body := mcpPost(t, hp.url, "admin-key", "", batchOf(4)); code != 200 || strings.Count(body, `"tools":[`) != 4 {
		t.Fatalf("a batch of 4 with --max-batch 4: %d %.300s", code, body)
	}
	if code, body := mcpPost(t, hp.url, "admin-key", "", batchOf(5)); code != 400 || !strings.Contains(body, `"code":-32600`) || !strings.Contains(body, "more than 4 messages (--max-batch)") {
		t.Errorf("a batch of 5: %d %s", code, body)
	}
	if code, body := mcpPost(t, hp.url, "admin-key", "2025-06-18", batchOf(2)); code != 400 || !strings.Contains(body, "has no JSON-RPC batches") {
		t.Errorf("a batch from a 2025-06-18 client: %d %s", code, body)
	}

	// Each item takes a token, the batch's all at once (the front door's
	// limit): a batch of 4 on a burst of 3 is refused whole, each request
	// answered with the rate-limit error, and takes nothing; a batch of 3
	// takes the burst.
	code, body := mcpPost(t, hp.url, "slow-key", "", batchOf(4))
	if code != 200 || strings.Count(body, `"code":-32000`) != 4 || !strings.Contains(body, "4 requests at once are more than its burst of 3") {
		t.Errorf("a batch of 4 on a burst of 3: %d %.600s", code, body)
	}
	if code, body := mcpPost(t, hp.url, "slow-key", "", batchOf(3)); code != 200 || strings.Count(body, `"tools":[`) != 3 {
		t.Errorf("a batch of 3 on a burst of 3: %d %.600s", code, body)
	}
	if code, _, body := httpDo(t, http.MethodGet, hp.url+"/opentool/load", "slow-key", ""); code != http.StatusTooManyRequests {
		t.Errorf("a listing after the burst: %d %.200s, want 429", code, body)
	}

	// The attack: four concurrent batches of ~1.1 MB of tools/list.
	before := rss(t, hp.cmd.Process.Pid)
	big := batchOf(25000)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if code, body := mcpPost(t, hp.url, "admin-key", "", big); code != 400 {
				t.Errorf("a batch of 25,000: %d %.200s", code, body)
			}
		}()
	}
	wg.Wait()
	after := rss(t, hp.cmd.Process.Pid)
	t.Logf("host RSS %d MiB before, %d MiB after four %d-byte batches", before>>20, after>>20, len(big))
	if after-before > 32<<20 {
		t.Errorf("host RSS grew by %d MiB", (after-before)>>20)
	}
}

// TestSlowReadersBoundedByResultMemory: clients that ask for large
// results and do not read them hold at most --max-result-memory of the
// host's memory; the calls beyond it fail at once as busy, and the memory
// goes back to the OS once the readers are gone (issue 20, finding 4).
func TestSlowReadersBoundedByResultMemory(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "rogue", "./testkit/plugins/rogue")
	hp := startHostProc(t, dir, "--max-result-memory", strconv.Itoa(64<<20), "--write-timeout", "3s")
	pid := hp.cmd.Process.Pid
	// Idle is measured after one result read whole: the pages of the
	// host's program that serving a result needs are then resident
	// (run gives the start's pages back before it turns ready,
	// internal/memtrim, so a host that has served nothing yet is
	// smaller than one that has served and freed everything).
	warm, err := http.Post(hp.url+"/opentool/call", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"big","params":{"mb":1},"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, warm.Body)
	_ = warm.Body.Close()
	idle := rss(t, pid)
	body := `{"jsonrpc":"2.0","method":"big","params":{"mb":12},"id":1}`
	const clients = 16
	var conns []net.Conn
	answers := make(chan string, clients)
	for range clients {
		conn, err := net.Dial("tcp", strings.TrimPrefix(hp.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, conn)
		_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
		fmt.Fprintf(conn, "POST /opentool/call HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		go func() {
			// Read only the start: a busy answer is small and whole; a
			// 12 MiB result stalls in the socket buffers.
			buf := make([]byte, 2048)
			n, _ := conn.Read(buf)
			answers <- string(buf[:n])
		}()
	}
	busy := 0
	deadline := time.After(30 * time.Second)
	for busy < clients-5 {
		select {
		case a := <-answers:
			if strings.Contains(a, `"kind":"busy"`) && strings.Contains(a, "--max-result-memory") {
				busy++
			}
		case <-deadline:
			t.Fatalf("%d busy answers after 30 s, want %d (64 MiB holds five 12 MiB results)", busy, clients-5)
		}
	}
	held := rss(t, pid)
	t.Logf("host RSS: idle %d MiB, with %d slow readers of 12 MiB results under a 64 MiB budget %d MiB; %d calls refused as busy", idle>>20, clients, held>>20, busy)
	// Unbounded, 16 readers hold 16 results and their 16 responses
	// (>= 384 MiB); the budget holds five of each, plus the refused
	// results until they are collected.
	if held-idle > 250<<20 {
		t.Errorf("host RSS grew by %d MiB with a 64 MiB result budget", (held-idle)>>20)
	}
	for _, c := range conns {
		c.Close()
	}
	var last int64
	testkit.Eventually(t, 60*time.Second, "host RSS back within 2x of idle after the readers left", func() bool {
		last = rss(t, pid)
		return last <= 2*idle
	})
	t.Logf("host RSS after the readers left: %d MiB", last>>20)
	// The budget is free again: a call with a reader that reads succeeds.
	if _, m := rpc(t, hp.url, body); m["result"] == nil {
		t.Errorf("a call after the readers left: %v", m["error"])
	}
}

// TestMetricsAddrGuarded: the keyless --metrics-addr listener refuses a
// DNS-rebinding Host like the main one, and serves its scraper.
func TestMetricsAddrGuarded(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	maddr := testkit.FreeAddr(t)
	startHostProc(t, dir, "--metrics-addr", maddr)
	port := maddr[strings.LastIndex(maddr, ":"):]
	if code, body := send(t, "http://"+maddr, "GET", "/metrics", "", "evil.example"+port, "", "", ""); code != http.StatusForbidden {
		t.Errorf("/metrics with Host evil.example: %d %.100s, want 403", code, body)
	}
	if code, body := send(t, "http://"+maddr, "GET", "/metrics", "", "", "", "", ""); code != 200 || !strings.Contains(body, "opentool_") {
		t.Errorf("/metrics: %d %.100s", code, body)
	}
}
