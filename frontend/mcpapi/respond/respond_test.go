package respond_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/respond"
)

// The events the test's "SDK" writes.
const (
	progressEvent = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
	responseEvent = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"
)

// serve is a POST handler as the front end's: the Writer tracked by
// marks (when track), the request handled through marks' middleware by
// handle, then the response event written and flushed as the SDK does.
func serve(marks *respond.Marks, track bool, handle func(w *respond.Writer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		dw := &respond.Writer{ResponseWriter: w, D: 10 * time.Second, Call: true}
		defer marks.Release(marks.Track(r, dw, track))
		w.Header().Set("Content-Type", "text/event-stream")
		h := marks.Middleware(func(context.Context, string, mcp.Request) (mcp.Result, error) {
			handle(dw)
			return &mcp.CallToolResult{}, nil
		})
		req := &mcp.ServerRequest[*mcp.CallToolParamsRaw]{Params: &mcp.CallToolParamsRaw{}, Extra: &mcp.RequestExtra{Header: r.Header}}
		if _, err := h(r.Context(), "tools/call", req); err != nil {
			panic(err)
		}
		_, _ = io.WriteString(dw, responseEvent)
		dw.Flush()
	}
}

// post posts to url and returns the response with its body read.
func post(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestResponseHeldForTheEnd: the response event, once the handler has
// returned it (the mark), is not flushed, so that it goes out with the
// end of the response in one write: a Content-Length, no chunks. Without
// the mark it is flushed (chunked), so the test tells the two apart.
func TestResponseHeldForTheEnd(t *testing.T) {
	for _, track := range []bool{true, false} {
		var marks respond.Marks
		srv := httptest.NewServer(serve(&marks, track, func(*respond.Writer) {}))
		resp, body := post(t, srv.URL)
		srv.Close()
		if body != responseEvent {
			t.Fatalf("track %v: body %q", track, body)
		}
		oneWrite := resp.ContentLength == int64(len(body)) && len(resp.TransferEncoding) == 0
		if oneWrite != track {
			t.Errorf("track %v: Content-Length %d, Transfer-Encoding %v: want the response in one write only when marked", track, resp.ContentLength, resp.TransferEncoding)
		}
	}
}

// TestEventsBeforeTheMarkFlushed: an event the SDK writes while the call
// runs (progress) reaches the client at once: the handler waits for the
// client to have read it before it returns.
func TestEventsBeforeTheMarkFlushed(t *testing.T) {
	var marks respond.Marks
	read := make(chan struct{})
	srv := httptest.NewServer(serve(&marks, true, func(w *respond.Writer) {
		_, _ = io.WriteString(w, progressEvent)
		w.Flush()
		<-read
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, len(progressEvent))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != progressEvent {
		t.Fatalf("first event %q, %v", buf, err)
	}
	close(read)
	rest, _ := io.ReadAll(resp.Body)
	if string(rest) != responseEvent {
		t.Errorf("then %q, want the response event", rest)
	}
}
