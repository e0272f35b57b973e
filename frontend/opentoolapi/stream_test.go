package opentoolapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
	"github.com/opentool-host/opentool-host/testkit"
)

func sseFrame(event, data string) string { return "event:" + event + "\ndata:" + data + "\n\n" }

func TestStreamCallMockByteExact(t *testing.T) {
	base := startMockAPI(t, opentoolapi.Config{})

	st, h, body := postJSON(t, base+"/opentool/streamCall", `{"jsonrpc":"2.0","method":"sequentiallyRead","params":{},"id":"s1"}`)
	want := sseFrame("start", `{"start":"sequentiallyRead"}`) +
		sseFrame("data", `{"jsonrpc":"2.0","result":{"data":"Hello"},"id":"s1"}`) +
		sseFrame("data", `{"jsonrpc":"2.0","result":{"data":"World"},"id":"s1"}`) +
		sseFrame("done", `{"done":"sequentiallyRead"}`)
	wantResponse(t, "sequentiallyRead", st, body, http.StatusOK, want)
	if ct := h.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q, want text/event-stream", ct)
	}
	if cc := h.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q, want no-cache", cc)
	}

	// A new text shows up as a third item; a numeric id and "2.0.0" are
	// accepted as on /call.
	postJSON(t, base+"/opentool/call", `{"jsonrpc":"2.0","method":"create","params":{"text":"a\nb"},"id":"c"}`)
	st, _, body = postJSON(t, base+"/opentool/streamCall", `{"jsonrpc":"2.0.0","method":"sequentiallyRead","id":7}`)
	want = sseFrame("start", `{"start":"sequentiallyRead"}`) +
		sseFrame("data", `{"jsonrpc":"2.0","result":{"data":"Hello"},"id":7}`) +
		sseFrame("data", `{"jsonrpc":"2.0","result":{"data":"World"},"id":7}`) +
		sseFrame("data", `{"jsonrpc":"2.0","result":{"data":"a\nb"},"id":7}`) +
		sseFrame("done", `{"done":"sequentiallyRead"}`)
	wantResponse(t, "sequentiallyRead after create", st, body, http.StatusOK, want)
}

func TestStreamCallErrors(t *testing.T) {
	base := startMockAPI(t, opentoolapi.Config{})
	url := base + "/opentool/streamCall"

	t.Run("non-streaming function", func(t *testing.T) {
		st, h, body := postJSON(t, url, `{"jsonrpc":"2.0","method":"count","params":{},"id":"c"}`)
		want := sseFrame("start", `{"start":"count"}`) +
			sseFrame("error", `{"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":"invalid request: wrong call kind: function \"count\" does not stream; use call"},"id":"c"}`)
		wantResponse(t, "count on streamCall", st, body, http.StatusOK, want)
		if ct := h.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q, want text/event-stream", ct)
		}
	})
	t.Run("unknown function", func(t *testing.T) {
		st, h, body := postJSON(t, url, `{"jsonrpc":"2.0","method":"nope","params":{},"id":"u"}`)
		wantResponse(t, "nope on streamCall", st, body, http.StatusOK,
			`{"jsonrpc":"2.0","result":{},"error":{"code":-32601,"message":"method not found: function \"nope\" is not served"},"id":"u"}`)
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
	})
	t.Run("parse error", func(t *testing.T) {
		st, _, body := postJSON(t, url, `{"jsonrpc":`)
		if st != http.StatusBadRequest || !strings.Contains(body, `"code":-32700`) {
			t.Errorf("HTTP %d %s, want 400 with code -32700", st, body)
		}
	})
	t.Run("invalid request", func(t *testing.T) {
		st, _, body := postJSON(t, url, `[{"jsonrpc":"2.0","method":"count"}]`)
		wantResponse(t, "batch", st, body, http.StatusBadRequest,
			`{"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":"invalid request: batch requests are not supported"},"id":null}`)
	})
	t.Run("GET", func(t *testing.T) {
		if st, _, _ := rawRequest(t, http.MethodGet, url, ""); st != http.StatusMethodNotAllowed {
			t.Errorf("GET streamCall: HTTP %d, want 405", st)
		}
	})
}

// TestStreamCallOneChunkPerFrame reads the raw HTTP/1.1 response: each
// frame must arrive as exactly one chunk, i.e. be written and flushed in
// one piece (the Dart client loses frames split across reads).
func TestStreamCallOneChunkPerFrame(t *testing.T) {
	base := startMockAPI(t, opentoolapi.Config{})
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := `{"jsonrpc":"2.0","method":"sequentiallyRead","params":{},"id":"x"}`
	fmt.Fprintf(conn, "POST /opentool/streamCall HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)

	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("HTTP %d, transfer encoding %v; want 200 chunked", resp.StatusCode, resp.TransferEncoding)
	}
	// http.ReadResponse has consumed only the header; read the chunks from br.
	var chunks []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("chunk size: %v (chunks so far %q)", err, chunks)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		if err != nil {
			t.Fatalf("chunk size line %q: %v", line, err)
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		chunks = append(chunks, string(data[:n]))
	}
	want := []string{
		sseFrame("start", `{"start":"sequentiallyRead"}`),
		sseFrame("data", `{"jsonrpc":"2.0","result":{"data":"Hello"},"id":"x"}`),
		sseFrame("data", `{"jsonrpc":"2.0","result":{"data":"World"},"id":"x"}`),
		sseFrame("done", `{"done":"sequentiallyRead"}`),
	}
	if strings.Join(chunks, "|") != strings.Join(want, "|") {
		t.Errorf("chunks:\n%q\nwant one per frame:\n%q", chunks, want)
	}
}

// fakeStreamer is a Backend whose StreamCall is scripted; it cannot look
// functions up, so the stream opens lazily at the first item.
type fakeStreamer struct {
	stream func(ctx context.Context, fn string, onItem func([]byte) error) error
}

func (f *fakeStreamer) Call(context.Context, string, []byte) ([]byte, error) {
	return nil, errors.New("not used")
}

func (f *fakeStreamer) StreamCall(ctx context.Context, _ *core.Exchange, fn string, _ []byte, onItem func([]byte) error) error {
	return f.stream(ctx, fn, onItem)
}

func (f *fakeStreamer) Document(string, string, string) *opentool.OpenTool { return nil }

func (f *fakeStreamer) Plugins() []supervise.PluginStatus { return nil }

func (f *fakeStreamer) Functions() []host.FunctionInfo { return nil }

func (f *fakeStreamer) ToolSearchThreshold() int { return 0 }

var _ opentoolapi.Backend = (*fakeStreamer)(nil)

func TestStreamCallScripted(t *testing.T) {
	f := &fakeStreamer{}
	url := testkit.Serve(t, route.Mux(opentoolapi.New(f, opentoolapi.Config{Logger: testkit.Logger(t)}).Routes())) + "/opentool/streamCall"
	req := `{"jsonrpc":"2.0","method":"tick","params":{},"id":1}`

	t.Run("tool error mid-stream", func(t *testing.T) {
		f.stream = func(_ context.Context, _ string, onItem func([]byte) error) error {
			if err := onItem([]byte("{\n  \"n\": 1\n}")); err != nil { // indented JSON is compacted
				return err
			}
			return &core.Error{Kind: core.KindTool, Function: "tick", Plugin: "p", Code: 500, Message: "boom\nline two"}
		}
		st, _, body := postJSON(t, url, req)
		want := sseFrame("start", `{"start":"tick"}`) +
			sseFrame("data", `{"jsonrpc":"2.0","result":{"n":1},"id":1}`) +
			sseFrame("error", `{"jsonrpc":"2.0","result":{},"error":{"code":500,"message":"boom\nline two"},"id":1}`)
		wantResponse(t, "tool error", st, body, http.StatusOK, want)
	})
	t.Run("no items", func(t *testing.T) {
		f.stream = func(context.Context, string, func([]byte) error) error { return nil }
		st, _, body := postJSON(t, url, req)
		wantResponse(t, "empty stream", st, body, http.StatusOK, sseFrame("start", `{"start":"tick"}`)+sseFrame("done", `{"done":"tick"}`))
	})
	t.Run("plugin failure before any item", func(t *testing.T) {
		f.stream = func(context.Context, string, func([]byte) error) error {
			return &core.Error{Kind: core.KindBusy, Function: "tick", Plugin: "p", Message: "busy: 64 calls in flight and 256 queued"}
		}
		st, _, body := postJSON(t, url, req)
		want := sseFrame("start", `{"start":"tick"}`) +
			sseFrame("error", `{"jsonrpc":"2.0","result":{},"error":{"code":-32603,"message":"plugin \"p\": function \"tick\": busy: 64 calls in flight and 256 queued","data":{"kind":"busy","plugin":"p"}},"id":1}`)
		wantResponse(t, "busy", st, body, http.StatusOK, want)
	})
	t.Run("not found before any item", func(t *testing.T) {
		f.stream = func(_ context.Context, fn string, _ func([]byte) error) error {
			return &core.Error{Kind: core.KindNotFound, Function: fn, Message: "not served"}
		}
		st, _, body := postJSON(t, url, req)
		wantResponse(t, "not found", st, body, http.StatusOK,
			`{"jsonrpc":"2.0","result":{},"error":{"code":-32601,"message":"method not found: function \"tick\" is not served"},"id":1}`)
	})
}

// TestStreamCallClientDisconnect: closing the response body mid-stream
// cancels the backend's context.
func TestStreamCallClientDisconnect(t *testing.T) {
	cancelled := make(chan error, 1)
	f := &fakeStreamer{stream: func(ctx context.Context, _ string, onItem func([]byte) error) error {
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				cancelled <- ctx.Err()
				return &core.Error{Kind: core.KindCanceled, Message: "canceled", Err: ctx.Err()}
			case <-time.After(5 * time.Millisecond):
			}
			if err := onItem([]byte(`{"i":` + strconv.Itoa(i) + `}`)); err != nil {
				cancelled <- err
				return err
			}
		}
	}}
	url := testkit.Serve(t, route.Mux(opentoolapi.New(f, opentoolapi.Config{Logger: testkit.Logger(t)}).Routes())) + "/opentool/streamCall"
	resp, err := testHTTP.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"tick","id":"d"}`))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"event:start", `data:{"start":"tick"}`, "", "event:data"} {
		line, err := br.ReadString('\n')
		if err != nil || strings.TrimSuffix(line, "\n") != want {
			t.Fatalf("read %q, %v; want %q", line, err, want)
		}
	}
	resp.Body.Close()
	select {
	case err := <-cancelled:
		t.Logf("stream stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's stream was not cancelled after the client disconnected")
	}
}
