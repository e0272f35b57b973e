package channels_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/channels"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
	"github.com/opentool-host/opentool-host/host/access"
)

// streamServer is a real HTTP server on 127.0.0.1 whose GETs open a
// standalone stream of c, as the front end does for the SDK: the stream
// registered (Open), its status written (200 unless the request asks
// ?status=N), then held until the client goes away (Close). opened gets
// each registered stream once its status is written.
func streamServer(t *testing.T, c *channels.Channels) (srv *httptest.Server, opened chan *channels.Stream) {
	t.Helper()
	opened = make(chan *channels.Stream, 4)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.URL.Query().Get("key"); name != "" {
			r = r.WithContext(access.WithGrant(r.Context(), access.NewGrant(name, []string{"*"})))
		}
		st := c.Open(w, r, 5*time.Second)
		if st == nil {
			http.Error(w, "not a stream", http.StatusTeapot)
			return
		}
		defer c.Close(r.Header.Get("Mcp-Session-Id"), st)
		code := http.StatusOK
		if r.URL.Query().Get("status") == "404" {
			code = http.StatusNotFound
		}
		st.WriteHeader(code)
		_ = st.Flush()
		opened <- st
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, opened
}

// get opens a GET of session id on srv (query q) and returns its
// response; the test's end closes it.
func get(t *testing.T, srv *httptest.Server, id, q string, header http.Header) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp?"+q, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// TestStreamSinks: a session's accepted GET stream is a sink of its own
// session for its own key only; a note written to it reaches the client
// as one SSE event; a stream the SDK refused (not 200) is no sink; once
// the GET ends its stream is no sink and a note to it fails.
func TestStreamSinks(t *testing.T) {
	var c channels.Channels
	srv, opened := streamServer(t, &c)

	resp := get(t, srv, "s1", "key=alice", nil)
	st := <-opened
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := c.Sinks("s1", "alice"); len(got) != 1 {
		t.Fatalf("alice's sinks of s1: %d, want 1", len(got))
	}
	for _, other := range []struct{ session, owner string }{{"s1", "bob"}, {"s1", ""}, {"s2", "alice"}} {
		if got := c.Sinks(other.session, other.owner); len(got) != 0 {
			t.Errorf("sinks of session %q for %q: %d, want 0 (the stream is alice's, of s1)", other.session, other.owner, len(got))
		}
	}
	if c.OnStdio() {
		t.Error("OnStdio without a stdio client")
	}

	params := json.RawMessage(`{"taskId":"t-1","status":"working"}`)
	if err := c.Sinks("s1", "alice")[0].Note("notifications/tasks/status", params); err != nil {
		t.Fatal(err)
	}
	event := readEvent(t, bufio.NewReader(resp.Body))
	var msg struct {
		JSONRPC, Method string
		Params          json.RawMessage
	}
	if err := json.Unmarshal([]byte(event), &msg); err != nil {
		t.Fatalf("event data %q: %v", event, err)
	}
	if msg.JSONRPC != "2.0" || msg.Method != "notifications/tasks/status" || string(msg.Params) != string(params) {
		t.Fatalf("event %q", event)
	}

	get(t, srv, "s3", "key=alice&status=404", nil)
	<-opened
	if got := c.Sinks("s3", "alice"); len(got) != 0 {
		t.Errorf("a stream answered 404 is a sink (%d)", len(got))
	}

	_ = resp.Body.Close() // the client goes away: the handler's Close
	deadline := time.Now().Add(5 * time.Second)
	for len(c.Sinks("s1", "alice")) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the ended stream is still a sink after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := st.Note("notifications/tasks/status", params); err == nil {
		t.Error("a note to an ended stream succeeded")
	}
}

// readEvent reads one SSE event from r and returns its data.
func readEvent(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	var data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event: %v (so far %q)", err, data)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" && data != "" {
			return data
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data += strings.TrimPrefix(v, " ") // one optional space (WHATWG SSE)
		}
	}
}

// TestOpenOnlyStandaloneStreams: a POST, a GET without a session and a
// GET resuming a stream (Last-Event-ID) register no stream.
func TestOpenOnlyStandaloneStreams(t *testing.T) {
	var c channels.Channels
	srv, _ := streamServer(t, &c)
	if resp := get(t, srv, "", "", nil); resp.StatusCode != http.StatusTeapot {
		t.Errorf("a GET without a session: status %d, want no stream", resp.StatusCode)
	}
	if resp := get(t, srv, "s1", "", http.Header{"Last-Event-Id": {"7"}}); resp.StatusCode != http.StatusTeapot {
		t.Errorf("a resuming GET: status %d, want no stream", resp.StatusCode)
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))
	r.Header.Set("Mcp-Session-Id", "s1")
	if st := c.Open(httptest.NewRecorder(), r, time.Second); st != nil {
		t.Error("a POST opened a stream")
	}
	if got := c.Sinks("s1", ""); len(got) != 0 {
		t.Errorf("sinks after refused opens: %d", len(got))
	}
}

// TestStdioChannel: connected through Stdio, the stdio client is every
// session's one sink; a note reaches it as a JSON-RPC notification; a
// tools/call asking for a core task is marked for the task middleware.
func TestStdioChannel(t *testing.T) {
	var c channels.Channels
	hostSide, clientSide := mcp.NewInMemoryTransports()
	ctx := context.Background()
	conn, err := c.Stdio(hostSide).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client, err := clientSide.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if !c.OnStdio() {
		t.Fatal("OnStdio false after the stdio connection")
	}
	sinks := c.Sinks("any", "anyone")
	if len(sinks) != 1 {
		t.Fatalf("sinks on stdio: %d, want 1", len(sinks))
	}
	go func() { _ = sinks[0].Note("notifications/tasks/status", json.RawMessage(`{"taskId":"t-2"}`)) }()
	msg, err := client.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := msg.(*jsonrpc.Request); !ok || n.IsCall() || n.Method != "notifications/tasks/status" || string(n.Params) != `{"taskId":"t-2"}` {
		t.Fatalf("the client read %#v", msg)
	}

	for _, tc := range []struct {
		params string
		marked bool
	}{
		{`{"name":"f","arguments":{},"task":{"ttl":1000}}`, true},
		{`{"name":"f","arguments":{}}`, false},
	} {
		id, _ := jsonrpc.MakeID(float64(1))
		go func() {
			_ = client.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(tc.params)})
		}()
		got, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req := got.(*jsonrpc.Request)
		extra, _ := req.Extra.(*mcp.RequestExtra)
		marked := extra != nil && extra.Header.Get(tasklayer.CoreTaskHeader) != ""
		if marked != tc.marked {
			t.Errorf("params %s: marked for a core task %v, want %v", tc.params, marked, tc.marked)
		}
	}
}
