package host_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestTransports: a Go plugin takes its calls over the data channel by
// default and over gRPC with NoDataChannel (or OPENTOOL_PLUGIN_TRANSPORT=grpc),
// with the same answers, streams and tool errors either way.
func TestTransports(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*core.Config)
		env  string
		want string
	}{
		{"default", nil, "", "data-channel"},
		{"NoDataChannel", func(c *core.Config) { c.NoDataChannel = true }, "", "grpc"},
		{"env", nil, "grpc", "grpc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(core.TransportEnv, tc.env)
			h := testkit.StartHost(t, tc.mod, "./testkit/plugins/faulty", "./plugins/mock")
			for _, p := range []string{"faulty", "mock"} {
				if got := pluginStatus(h, p).Transport; got != tc.want {
					t.Fatalf("%s: transport %q, want %q", p, got, tc.want)
				}
			}
			ctx := context.Background()
			res, err := h.Call(ctx, "echo", []byte(`{"x":"hi"}`))
			if err != nil || !strings.Contains(string(res), `"hi"`) {
				t.Fatalf("echo: %s, %v", res, err)
			}
			// More items than the data channel's flow-control window.
			const n = 40
			for i := range n {
				if _, err := h.Call(ctx, "create", []byte(fmt.Sprintf(`{"text":"t%d"}`, i))); err != nil {
					t.Fatal(err)
				}
			}
			var items []string
			if err := h.StreamCall(ctx, nil, "sequentiallyRead", nil, func(b []byte) error { items = append(items, string(b)); return nil }); err != nil || len(items) < n || items[len(items)-1] != fmt.Sprintf(`{"data":"t%d"}`, n-1) {
				t.Fatalf("stream: %d items, %v", len(items), err)
			}
			_, err = h.Call(ctx, "run", nil)
			if e := core.AsError(err); e == nil || e.Kind != core.KindTool || e.Code != 500 {
				t.Fatalf("run: %v, want the tool's code-500 error", err)
			}
		})
	}
}

// TestDataChannelViolationKillsPlugin: a plugin that answers a call id
// the host never sent is killed; the caller's error and the plugin's
// status say why, and the restarted plugin is killed again the same way
// (it cannot be trusted to answer the right call).
func TestDataChannelViolationKillsPlugin(t *testing.T) {
	t.Setenv(core.TransportEnv, "") // the data channel, also when the suite runs on gRPC
	h := testkit.StartHost(t, nil, "./testkit/plugins/badchannel")
	before := pluginStatus(h, "badchannel")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := h.Call(ctx, "echo", nil)
	e := core.AsError(err)
	if e == nil || e.Kind != core.KindExited || !strings.Contains(e.Status, "data channel protocol violation") {
		t.Fatalf("call: %v, want KindExited saying data channel protocol violation", err)
	}
	testkit.Eventually(t, 20*time.Second, "the plugin was restarted", func() bool {
		s := pluginStatus(h, "badchannel")
		return s.Restarts > before.Restarts && s.PID != before.PID
	})
}
