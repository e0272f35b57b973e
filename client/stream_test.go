package client_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/client"
)

func TestStreamCallMock(t *testing.T) {
	c := client.New(client.WithBaseURL(startMockServer(t)))
	ctx := testCtx(t)

	var got []string
	err := c.StreamCall(ctx, client.FunctionCall{ID: "s-1", Name: "sequentiallyRead"}, func(r client.ToolReturn) error {
		if r.ID != "s-1" {
			t.Errorf("item id %q, want s-1", r.ID)
		}
		got = append(got, r.Result["data"].(string))
		return nil
	})
	if err != nil || strings.Join(got, ",") != "Hello,World" {
		t.Fatalf("sequentiallyRead: %q, %v", got, err)
	}

	// onItem's error stops the stream and is returned as is.
	stop := errors.New("enough")
	n := 0
	err = c.StreamCall(ctx, client.FunctionCall{Name: "sequentiallyRead"}, func(client.ToolReturn) error { n++; return stop })
	if err != stop || n != 1 {
		t.Errorf("onItem error: %v after %d items, want %v after 1", err, n, stop)
	}

	// A function that does not stream.
	var ce *client.CallError
	err = c.StreamCall(ctx, client.FunctionCall{Name: "count"}, func(client.ToolReturn) error { t.Error("item for count"); return nil })
	if !errors.As(err, &ce) || ce.Code != -32600 || !strings.Contains(ce.Message, `function "count" does not stream; use call`) {
		t.Errorf("count on StreamCall: %v, want *CallError -32600", err)
	}
	// An unknown function: a plain JSON-RPC error before any stream.
	err = c.StreamCall(ctx, client.FunctionCall{Name: "nope"}, func(client.ToolReturn) error { return nil })
	if !errors.As(err, &ce) || ce.Code != -32601 {
		t.Errorf("nope on StreamCall: %v, want *CallError -32601", err)
	}

	// The mock still works after an abandoned stream.
	if ret, err := c.Call(ctx, client.FunctionCall{Name: "count"}); err != nil || ret.Result["count"] != float64(2) {
		t.Errorf("count after streams: %+v, %v", ret, err)
	}
}

// sseServer returns a client of a server that writes raw one byte at a
// time, flushing after each, so that frames arrive split across reads.
func sseServer(t *testing.T, raw string) *client.Client {
	return fakeServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := 0; i < len(raw); i++ {
			_, _ = w.Write([]byte{raw[i]})
			_ = rc.Flush()
		}
	})
}

func TestStreamCallSplitFrames(t *testing.T) {
	ctx := testCtx(t)
	raw := ": a comment\r\n" +
		"event: start\r\ndata: {\"start\":\"f\"}\r\n\r\n" +
		"event:data\rdata:{\"jsonrpc\":\"2.0\",\"result\":{\"n\":1},\"id\":\"i\"}\r\r" +
		"event:ping\ndata:{}\n\n" +
		"event:data\ndata:{\"jsonrpc\":\"2.0\",\n" +
		"data:\"result\":{\"n\":2},\"id\":\"i\"}\n\n" +
		"event:done\ndata:{\"done\":\"f\"}\n\n"
	var got []float64
	err := sseServer(t, raw).StreamCall(ctx, client.FunctionCall{Name: "f"}, func(r client.ToolReturn) error {
		got = append(got, r.Result["n"].(float64))
		return nil
	})
	if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("split frames: %v, %v; want [1 2], nil", got, err)
	}

	// An error event ends the stream with a *CallError.
	raw = "event:start\ndata:{\"start\":\"f\"}\n\n" +
		"event:data\ndata:{\"jsonrpc\":\"2.0\",\"result\":{\"n\":1},\"id\":\"i\"}\n\n" +
		"event:error\ndata:{\"jsonrpc\":\"2.0\",\"result\":{},\"error\":{\"code\":500,\"message\":\"disk gone\"},\"id\":\"i\"}\n\n"
	n := 0
	err = sseServer(t, raw).StreamCall(ctx, client.FunctionCall{Name: "f"}, func(client.ToolReturn) error { n++; return nil })
	var ce *client.CallError
	if !errors.As(err, &ce) || ce.Code != 500 || ce.Message != "disk gone" || n != 1 {
		t.Errorf("error event: %v after %d items, want *CallError 500 after 1", err, n)
	}

	// A stream cut before done.
	raw = "event:start\ndata:{\"start\":\"f\"}\n\nevent:data\ndata:{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":\"i\"}\n\nevent:done\ndata:{\"do"
	err = sseServer(t, raw).StreamCall(ctx, client.FunctionCall{Name: "f"}, func(client.ToolReturn) error { return nil })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut stream: %v, want io.ErrUnexpectedEOF", err)
	}

	// A data event whose result is null.
	raw = "event:data\ndata:{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":\"i\"}\n\n"
	var en *client.ErrorNullError
	if err := sseServer(t, raw).StreamCall(ctx, client.FunctionCall{Name: "f"}, func(client.ToolReturn) error { return nil }); !errors.As(err, &en) {
		t.Errorf("null result: %v, want *ErrorNullError", err)
	}
}
