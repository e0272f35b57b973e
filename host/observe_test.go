package host_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestOnCallRecordsEveryCall: Config.OnCall gets one record per call with
// the caller, the plugin, sizes and the outcome's kind.
func TestOnCallRecordsEveryCall(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calc", "./plugins/calculator")
	var records func() []core.CallRecord
	h := startHost(t, dir, func(c *core.Config) { records = recordCalls(c) })
	ctx := core.WithCaller(context.Background(), core.Caller{FrontEnd: "opentool"})
	ctx = core.WithCaller(ctx, core.Caller{Key: "alice"})
	if _, err := h.Call(ctx, "add", []byte(`{"a":1,"b":2}`)); err != nil {
		t.Fatal(err)
	}
	_, _ = h.Call(ctx, "divide", []byte(`{"a":1,"b":0}`))
	_, _ = h.Call(ctx, "nope", nil)
	_, _ = h.Call(ctx, "add", []byte(`{"a":"x"}`))
	recs := records()
	want := []struct {
		fn, plugin string
		kind       core.Kind
		items      int
	}{{"add", "calc", "", 1}, {"divide", "calc", core.KindTool, 0}, {"nope", "", core.KindNotFound, 0}, {"add", "calc", core.KindInvalidParams, 0}}
	if len(recs) != len(want) {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for i, w := range want {
		r := recs[i]
		if r.Function != w.fn || r.Plugin != w.plugin || r.Kind != w.kind || r.Items != w.items || r.Caller != (core.Caller{FrontEnd: "opentool", Key: "alice"}) || r.Duration <= 0 {
			t.Errorf("record %d = %+v, want %+v", i, r, w)
		}
	}
	if recs[0].ArgBytes != len(`{"a":1,"b":2}`) || recs[0].ResultBytes == 0 {
		t.Errorf("sizes: %+v", recs[0])
	}
}

// TestEventsDeliverARestart: a subscriber sees a crash (restarting) and
// the restart (ready) within a second each.
func TestEventsDeliverARestart(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "faulty", "./testkit/plugins/faulty")
	h := startHost(t, dir, nil)
	events, cancel := h.Subscribe(16)
	defer cancel()
	_, _ = h.Call(context.Background(), "exit", nil)
	for _, want := range []string{core.EventRestarting, core.EventReady} {
		deadline := time.After(time.Second)
	wait:
		for {
			select {
			case ev := <-events:
				t.Logf("event %+v", ev)
				if ev.Plugin == "faulty" && ev.Type == want {
					if want == core.EventRestarting && ev.Reason == "" {
						t.Errorf("restarting without a reason: %+v", ev)
					}
					break wait
				}
			case <-deadline:
				t.Fatalf("no %s event within 1 s", want)
			}
		}
	}
}

// TestOnCallCountsResults: a record counts the results its caller got:
// each item of a streaming call, the one result of a unary call, and for
// a streaming function's items collected by call_tool the one object
// they make (its items are not the call's results), with its size.
func TestOnCallCountsResults(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "mock", "./plugins/mock")
	var records func() []core.CallRecord
	h := startHost(t, dir, func(c *core.Config) {
		c.ToolSearch, c.ToolSearchThreshold = true, 1
		records = recordCalls(c)
	})
	ctx := context.Background()
	for _, text := range []string{"one", "two"} {
		if _, err := h.Call(ctx, "create", []byte(`{"text":"`+text+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var streamed int64
	n := 0
	if err := h.StreamCall(ctx, nil, "sequentiallyRead", nil, func(item []byte) error {
		streamed += int64(len(item))
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	collected, err := h.Call(ctx, "call_tool", []byte(`{"name":"sequentiallyRead"}`))
	if err != nil {
		t.Fatal(err)
	}
	recs := records()
	if n < 2 || len(recs) != 4 {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for i, w := range []struct {
		fn    string
		items int
		bytes int64
	}{{"create", 1, -1}, {"create", 1, -1}, {"sequentiallyRead", n, streamed}, {"sequentiallyRead", 1, int64(len(collected))}} {
		r := recs[i]
		if r.Function != w.fn || r.Items != w.items || r.ResultBytes == 0 || w.bytes >= 0 && r.ResultBytes != w.bytes {
			t.Errorf("record %d = %s: %d items, %d bytes; want %s: %d items, %d bytes (-1: any)", i, r.Function, r.Items, r.ResultBytes, w.fn, w.items, w.bytes)
		}
	}
}

// recordCalls sets c.OnCall to keep every record and returns what it
// kept so far.
func recordCalls(c *core.Config) func() []core.CallRecord {
	var (
		mu   sync.Mutex
		recs []core.CallRecord
	)
	c.OnCall = func(_ context.Context, r core.CallRecord) {
		mu.Lock()
		recs = append(recs, r)
		mu.Unlock()
	}
	return func() []core.CallRecord {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(recs)
	}
}
