package e2e_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/testkit"
)

// stormSessions and stormRun are the client sessions of
// TestOutsideCallStormIsBounded and how long the storm runs.
const (
	stormSessions = 6
	stormRun      = 10 * time.Second
	// stormRSSBound is how much the host's RSS may grow over the run.
	stormRSSBound = 64 << 10 // KiB
	// stormProbeTimeout bounds the ping that reads the server's counts,
	// in the host (--call-timeout) and in the client.
	stormProbeTimeout = 2 * time.Minute
)

// TestOutsideCallStormIsBounded: a declared MCP server (a real process,
// testkit/plugins/hostilemcp "outside") floods each client's own
// upstream session with roots/list, elicitation/create and
// sampling/createMessage outside any call, while its clients hold their
// GET streams and answer nothing. At most 16 of each session's requests
// wait for the client (the rest are refused at once with a JSON-RPC
// error, which the server counts), the host's RSS stays within
// stormRSSBound, and each session's DELETE answers at once, ending the
// requests it held.
func TestOutsideCallStormIsBounded(t *testing.T) {
	dir := t.TempDir()
	bin := testkit.Build(t, "./testkit/plugins/hostilemcp")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"outside": map[string]any{"command": bin, "args": []string{"outside"}}}})
	writeTestFile(t, filepath.Join(dir, "outside.mcp.json"), string(b))
	writeTestFile(t, filepath.Join(dir, "outside.policy.json"), `{"prefix":"outside_"}`)
	// The ping below may wait behind the flood for longer than the
	// default call timeout (60 s) on a loaded machine: the host's limit
	// is the probe client's (stormProbeTimeout), so that neither cuts it.
	hp := startHostProc(t, dir, "--api-key", "storm-key", "--call-timeout", stormProbeTimeout.String())
	pid := hp.cmd.Process.Pid

	var clients []*mtClient
	var relayed [stormSessions]atomic.Int64
	for i := range stormSessions {
		c := &mtClient{url: hp.url + "/mcp", key: "storm-key", version: "2025-11-25", hc: mtHTTP}
		h, out, raw := c.post(t, "initialize", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{},"sampling":{},"elicitation":{"form":{}}},"clientInfo":{"name":"mute","version":"1"}}}`)
		if out.Error != nil || h.Get("Mcp-Session-Id") == "" {
			t.Fatalf("initialize: %s", raw)
		}
		c.session = h.Get("Mcp-Session-Id")
		c.post(t, "notifications/initialized", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		// The GET stream: read (the server's requests counted), never answered.
		resp := getStream(t, c.url, c.key, map[string]string{"Mcp-Session-Id": c.session, "Mcp-Protocol-Version": c.version})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET stream %d: %d", i, resp.StatusCode)
		}
		t.Cleanup(func() { resp.Body.Close() })
		go func() {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"method"`) {
					relayed[i].Add(1)
				}
			}
		}()
		clients = append(clients, c)
	}
	before := vmKB(t, pid, "VmRSS")
	start := time.Now()
	for i, c := range clients {
		if _, out, raw := c.post(t, "tools/call", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"outside_attack","arguments":{}}}`); out.Error != nil || !strings.Contains(raw, "flooding") {
			t.Fatalf("session %d: attack: %s", i, raw)
		}
	}
	peak := before
	deadline := time.Now().Add(stormRun)
	for time.Now().Before(deadline) {
		peak = max(peak, vmKB(t, pid, "VmRSS"))
		time.Sleep(200 * time.Millisecond) // a sampling interval, not a wait for an event
	}
	pong := regexp.MustCompile(`pong answered=(\d+) refused=(\d+)`)
	// The ping ends the server's flood and reads its counts: its answer
	// comes after what the flood had written before it (no more than
	// the pipe and the server's buffer hold), which a loaded machine
	// (make test's legs under -race) may still take a while to read;
	// how long is no claim here.
	probe := &http.Client{Timeout: stormProbeTimeout}
	for i, c := range clients {
		c.hc = probe
		pinged := time.Now()
		_, out, raw := c.post(t, "tools/call", "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"outside_ping","arguments":{}}}`)
		m := pong.FindStringSubmatch(raw)
		if out.Error != nil || m == nil {
			t.Fatalf("session %d: ping: %s", i, raw)
		}
		answered, _ := strconv.Atoi(m[1])
		refused, _ := strconv.Atoi(m[2])
		t.Logf("session %d: %d requests relayed to the client, %d answered, %d refused; ping answered in %v", i, relayed[i].Load(), answered, refused, time.Since(pinged).Round(time.Millisecond))
		if refused == 0 {
			t.Errorf("session %d: no request of the storm was refused", i)
		}
		// 16 wait for the client at once, each at most 30 s.
		if most := int64(16 * (1 + time.Since(start)/(30*time.Second))); relayed[i].Load() > most {
			t.Errorf("session %d: %d requests relayed to a client that answers none; want at most %d", i, relayed[i].Load(), most)
		}
	}
	t.Logf("host RSS: %d MiB before the storm, %d MiB at its peak over %v (%d sessions)", before>>10, peak>>10, stormRun, stormSessions)
	if peak-before > stormRSSBound {
		t.Errorf("the host's RSS grew by %d MiB over the storm; want at most %d MiB", (peak-before)>>10, stormRSSBound>>10)
	}
	for i, c := range clients {
		req, _ := http.NewRequest(http.MethodDelete, c.url, nil)
		req.Header.Set("Authorization", "Bearer "+c.key)
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", c.version)
		start := time.Now()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("session %d: DELETE: %v", i, err)
		}
		resp.Body.Close()
		t.Logf("session %d: DELETE %d in %v", i, resp.StatusCode, time.Since(start).Round(time.Millisecond))
		if resp.StatusCode/100 != 2 {
			t.Errorf("session %d: DELETE: %d", i, resp.StatusCode)
		}
	}
}
