package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// serveCounting serves h on loopback and counts the connections the
// server has closed (a connection closes only after its handler returned,
// so closed == sent means every call is over).
func serveCounting(t *testing.T, h http.Handler) (addr string, closed *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed = &atomic.Int64{}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed.Add(1)
		}
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), closed
}

// hangUp sends one POST /opentool/call and closes the socket at once,
// as a caller that gives up does.
func hangUp(t *testing.T, addr, body string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /opentool/call HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	conn.Close()
}

// TestHangUpsNeverKillAPlugin: 150 callers that hang up right after
// sending, to a function that honours cancellation, never get the plugin
// killed or restarted, with a free and with a full concurrency queue.
func TestHangUpsNeverKillAPlugin(t *testing.T) {
	for _, tc := range []struct {
		name           string
		maxConcurrency int
	}{{"free slots", 64}, {"full queue", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			h := testkit.StartHost(t, func(c *core.Config) { c.MaxConcurrency = tc.maxConcurrency }, "./testkit/plugins/faulty")
			addr, closed := serveCounting(t, route.Mux(opentoolapi.New(h, opentoolapi.Config{Logger: testkit.Logger(t)}).Routes()))
			before := pluginStatus(h, "faulty")
			const n = 150
			body := `{"jsonrpc":"2.0","method":"sleep","params":{"ms":5000},"id":1}`
			for range n {
				hangUp(t, addr, body)
			}
			testkit.Eventually(t, 30*time.Second, "every hung-up call returned", func() bool { return closed.Load() == n })
			after := pluginStatus(h, "faulty")
			if after.PID != before.PID || after.Restarts != 0 || after.State != core.StateReady {
				t.Fatalf("plugin changed: before %+v, after %+v", before, after)
			}
			got := call(t, h, "sleeps", "")
			t.Logf("%d hang-ups: plugin pid %d kept, 0 restarts; sleeps in the plugin: %v", n, after.PID, got)
			if got["active"] != 0.0 || got["cancelled"] == 0.0 {
				t.Fatalf("sleeps = %v, want none active and some cancelled (the calls reached the plugin)", got)
			}
		})
	}
}

// TestCallerGoneIsNotSent: a call whose context is over before it is
// sent never reaches the plugin.
func TestCallerGoneIsNotSent(t *testing.T) {
	h := testkit.StartHost(t, nil, "./testkit/plugins/faulty")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.Call(ctx, "sleep", []byte(`{"ms":5000}`))
	if e := core.AsError(err); e == nil || e.Kind != core.KindCanceled {
		t.Fatalf("err = %v, want KindCanceled", err)
	}
	if got := call(t, h, "sleeps", ""); got["cancelled"] != 0.0 {
		t.Fatalf("sleeps = %v: a call whose caller was gone reached the plugin", got)
	}
}

// TestResultsCheckedAtTheBoundary: a plugin's result must be one JSON
// object within Config.MaxResultBytes; otherwise the caller gets a clear
// error naming the plugin, and nothing malformed reaches the wire.
func TestResultsCheckedAtTheBoundary(t *testing.T) {
	h := testkit.StartHost(t, func(c *core.Config) { c.MaxResultBytes = 1 << 20 }, "./testkit/plugins/rogue")
	base := testkit.Serve(t, route.Mux(opentoolapi.New(h, opentoolapi.Config{Logger: testkit.Logger(t)}).Routes()))
	for fn, reason := range map[string]string{
		"forge":     "not one JSON object",
		"truncated": "not one JSON object",
		"array":     "not one JSON object",
		"string":    "not one JSON object",
		"twoValues": "not one JSON object",
		"big":       "larger than the limit of 1048576 bytes",
	} {
		t.Run(fn, func(t *testing.T) {
			_, err := h.Call(context.Background(), fn, []byte(`{"mb":2}`))
			e := core.AsError(err)
			if e == nil || e.Kind != core.KindResultRejected || e.Plugin != "rogue" || !strings.Contains(e.Message, reason) {
				t.Fatalf("err = %v, want KindResultRejected from rogue: %s", err, reason)
			}
			// On the wire: one valid JSON-RPC response with -32603 naming
			// the plugin, and nothing of the plugin's bytes.
			resp, err := http.Post(base+"/opentool/call", "application/json",
				strings.NewReader(`{"jsonrpc":"2.0","method":"`+fn+`","params":{"mb":2},"id":7}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var msg struct {
				JSONRPC string         `json:"jsonrpc"`
				Result  map[string]any `json:"result"`
				Error   struct {
					Code    int            `json:"code"`
					Message string         `json:"message"`
					Data    map[string]any `json:"data"`
				} `json:"error"`
				ID int `json:"id"`
			}
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&msg); err != nil || dec.More() {
				t.Fatalf("response is not one JSON-RPC object: %v: %s", err, raw)
			}
			if msg.Error.Code != -32603 || !strings.Contains(msg.Error.Message, `plugin "rogue"`) || strings.Contains(string(raw), "forged") || msg.ID != 7 {
				t.Fatalf("response = %s", raw)
			}
		})
	}
	if got := call(t, h, "ok", ""); got["ok"] != true {
		t.Fatalf("ok = %v", got)
	}
	if st := pluginStatus(h, "rogue"); st.Restarts != 0 || st.State != core.StateReady {
		t.Fatalf("rogue results must not restart the plugin: %+v", st)
	}
}

// TestStreamCancelGrace: the cancel grace holds for streams as for
// calls. A stream that ends when cancelled keeps its plugin; one that
// ignores cancellation gets its plugin killed after CancelGrace, and the
// plugin is restarted.
func TestStreamCancelGrace(t *testing.T) {
	h := testkit.StartHost(t, func(c *core.Config) { c.CancelGrace = 200 * time.Millisecond }, "./testkit/plugins/faulty")
	before := pluginStatus(h, "faulty")
	stream := func(fn string) (int, error) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		err := h.StreamCall(ctx, nil, fn, nil, func([]byte) error {
			if n++; n == 3 || fn == "stuckStream" {
				cancel() // the caller leaves after a few items
			}
			return nil
		})
		return n, err
	}
	n, err := stream("ticks")
	if e := core.AsError(err); e == nil || e.Kind != core.KindCanceled || strings.Contains(e.Message, "killed") {
		t.Fatalf("ticks: %d items, err %v; want KindCanceled without a kill", n, err)
	}
	if st := pluginStatus(h, "faulty"); st.PID != before.PID || st.Restarts != 0 {
		t.Fatalf("a stream that honoured cancellation got its plugin restarted: %+v", st)
	}
	_, err = stream("stuckStream")
	if e := core.AsError(err); e == nil || e.Kind != core.KindCanceled || !strings.Contains(e.Message, "ignored cancellation") {
		t.Fatalf("stuckStream: err %v; want KindCanceled saying the plugin was killed", err)
	}
	testkit.Eventually(t, 10*time.Second, "faulty restarted", func() bool {
		st := pluginStatus(h, "faulty")
		return st.State == core.StateReady && st.PID != before.PID && st.Restarts == 1
	})
}
