package mcpadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// The SDK decodes every result into its own types, which drop what they
// do not know: of a tools/list result, each tool's definition as the
// server wrote it (execution.taskSupport, which tasks.go needs, members
// of later revisions: rawTools), and the CreateTaskResult (taskId,
// status, pollIntervalMs, ...) a server answers a tools/call with
// (tasks.go). A tools/call's own result is not re-read: it goes on as the
// SDK's client decoded it (CallDirect), which is what the host's MCP
// front end answers with (its SDK server encodes that type). A request
// whose context carries a rawSink (withRawResult) hands its raw result to
// the sink before the SDK decodes it, so that the sink has run when the
// SDK's call returns:
//
//	transport          how
//	stdio, HTTP+SSE    rawConn, around the connection: it notes the id of
//	                   each such request it writes and hands over the
//	                   result of the response with that id
//	streamable HTTP    rawResponses, an http.RoundTripper: the SDK needs its
//	                   own connection there (the session's state reaches it
//	                   by a method a wrapper would hide), so the response to
//	                   such a POST (or to the GET resuming its stream) is
//	                   read as the SDK reads it, and the first result in it
//	                   handed over: a POST carries one request

// maxRawResult bounds the bytes kept of one response while looking for
// its result; a larger one is not handed to the sink (the SDK reads it
// all the same).
const maxRawResult = 32 << 20

// lateResults is how long after its context ended a request's result
// still reaches its sink over stdio and HTTP+SSE (the server may have
// answered as the caller gave up: a task it created must be cancelled,
// tasks.go). Over streamable HTTP the request's end aborts its response.
const lateResults = 5 * time.Second

// rawSink receives the raw result (a JSON object) of a request sent with
// its context, possibly up to lateResults after that context ended. It
// runs on the goroutine reading the connection: it must not block.
type rawSink func(result json.RawMessage)

// rawKey is the context key of a rawSink.
type rawKey struct{}

// withRawResult returns ctx whose requests hand their results to sink.
func withRawResult(ctx context.Context, sink rawSink) context.Context {
	return context.WithValue(ctx, rawKey{}, sink)
}

// rawSinkOf returns ctx's rawSink, or nil.
func rawSinkOf(ctx context.Context) rawSink {
	s, _ := ctx.Value(rawKey{}).(rawSink)
	return s
}

// rawConn is a connection whose requests sent with a rawSink hand their
// results to it, and on which the adapter sends requests of its own
// beside the SDK's (call, owncall.go).
type rawConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]pendingRaw             // request id → sink, until its response
	own     map[jsonrpc.ID]chan *jsonrpc.Response // the adapter's own requests in flight (call), until their responses
	next    int64                                 // the last id of the adapter's own requests
	end     chan struct{}                         // closed once reading ended: no response comes any more
	endErr  error                                 // why, set before end closes
	forget  func()                                // run once reading ended (Adapter.keepConn); under mu
}

// pendingRaw is the sink of a request awaiting its response, and how to
// stop the clean-up armed for it.
type pendingRaw struct {
	sink rawSink
	stop func() bool // context.AfterFunc's stop
}

// newRawConn wraps c, the server's requests in flight on it bounded
// (boundCalls).
func newRawConn(c mcp.Connection) *rawConn {
	return &rawConn{Connection: boundCalls(c), pending: map[jsonrpc.ID]pendingRaw{},
		own: map[jsonrpc.ID]chan *jsonrpc.Response{}, end: make(chan struct{})}
}

// Write implements mcp.Connection.
func (c *rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if sink := rawSinkOf(ctx); sink != nil {
			// A request given up keeps its entry a while, for a late
			// answer (lateResults), not for ever: a server need not
			// answer a cancelled request. A request answered drops its
			// entry (take) and this clean-up with it: no goroutine and
			// no timer per answered call.
			c.mu.Lock()
			c.pending[req.ID] = pendingRaw{sink: sink, stop: context.AfterFunc(ctx, func() {
				time.AfterFunc(lateResults, func() { c.take(req.ID) })
			})}
			c.mu.Unlock()
		}
		if wantsCoreTask(ctx, req.Method) { // coretasks.go
			with := *req
			with.Params = withTaskParam(req.Params)
			msg = &with
		}
	}
	return c.Connection.Write(ctx, msg)
}

// Read implements mcp.Connection.
// The response to one of the adapter's own requests (call) goes to it
// and not to the SDK, which did not send that request.
func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.ended(err) // the SDK reads no more after an error
			return msg, err
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok {
			return msg, nil
		}
		if own(resp.ID) {
			if ch := c.takeOwn(resp.ID); ch != nil {
				ch <- resp // buffered: call may have given up meanwhile
			}
			continue // answered, or late: the SDK sent no such request
		}
		if sink := c.take(resp.ID); sink != nil && resp.Error == nil {
			sink(bytes.Clone(resp.Result))
		}
		return msg, nil
	}
}

// ownIDPrefix begins the id of each of the adapter's own requests; the
// SDK's ids are numbers, so the two never meet.
const ownIDPrefix = "opentool-host/call/"

// own reports whether id is that of one of the adapter's own requests.
func own(id jsonrpc.ID) bool {
	s, ok := id.Raw().(string)
	return ok && strings.HasPrefix(s, ownIDPrefix)
}

// call sends the request method with params (a JSON object) on the
// connection as a request of the adapter's own, not the SDK's (no
// middleware, no decoding: the SDK's client session stays the session,
// answering the server's requests and notifications, which the relay
// routes by the calls in flight), and returns its result as the server
// wrote it. When ctx ends first the server is sent
// notifications/cancelled for it, off the caller's way, as the SDK's
// client does (MCP "Cancellation"). Errors: as the SDK's client call
// gives them: "calling METHOD: ERR" wrapping the server's
// *jsonrpc.Error; ctx's; mcp.ErrConnectionClosed wrapped when the
// connection ended before the response came; the write's.
func (c *rawConn) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	ch := responseChans.Get().(chan *jsonrpc.Response)
	c.mu.Lock()
	if c.endErr != nil {
		err := c.endErr
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, method, err)
	}
	c.next++
	// The id, made in one buffer (the prefix and an int64's digits): a
	// string, which MakeID never refuses.
	var b [len(ownIDPrefix) + 20]byte
	id, _ := jsonrpc.MakeID(string(strconv.AppendInt(append(b[:0], ownIDPrefix...), c.next, 10)))
	c.own[id] = ch
	c.mu.Unlock()
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		c.takeOwn(id)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("calling %q: %w", method, err)
	}
	select {
	case resp := <-ch:
		responseChans.Put(ch) // its one send received: see responseChans
		return answer(method, resp)
	case <-ctx.Done():
		c.takeOwn(id)
		go c.cancelled(ctx, id)
		return nil, ctx.Err()
	case <-c.end:
		c.takeOwn(id)
		select {
		case resp := <-ch: // read before reading ended: select chose end
			responseChans.Put(ch)
			return answer(method, resp)
		default:
		}
		return nil, fmt.Errorf("%w: calling %q: %v", mcp.ErrConnectionClosed, method, c.endErr)
	}
}

// responseChans holds the channels of the adapter's own requests (each
// buffered for one response), reused: a channel goes back only once its
// request received the one response Read sends it (Read takes the request
// off c.own, under c.mu, before it sends; nothing else sends), never from
// a request that gave up, whose response may still be on its way.
var responseChans = sync.Pool{New: func() any { return make(chan *jsonrpc.Response, 1) }}

// answer is the result of resp, the response to the adapter's own
// request method, or the server's error as the SDK's client wraps it.
func answer(method string, resp *jsonrpc.Response) (json.RawMessage, error) {
	if resp.Error != nil {
		return nil, fmt.Errorf("calling %q: %w", method, resp.Error)
	}
	return resp.Result, nil
}

// cancelled tells the server that the request id, given up with ctx, is
// cancelled (notifications/cancelled with ctx's error as the reason),
// waiting up to notifyCancellation for the write.
func (c *rawConn) cancelled(ctx context.Context, id jsonrpc.ID) {
	nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), notifyCancellation)
	defer stop()
	params, err := json.Marshal(&mcp.CancelledParams{RequestID: id.Raw(), Reason: ctx.Err().Error()})
	if err != nil {
		return
	}
	_ = c.Connection.Write(nctx, &jsonrpc.Request{Method: mcpmethod.Cancelled, Params: params})
}

// notifyCancellation bounds the write of a notifications/cancelled, as
// the SDK's client bounds its own (5 s).
const notifyCancellation = 5 * time.Second

// takeOwn removes and returns the channel of the adapter's own request
// id (nil when none).
func (c *rawConn) takeOwn(id jsonrpc.ID) chan *jsonrpc.Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.own[id]
	if !ok {
		return nil
	}
	delete(c.own, id)
	return ch
}

// ended records that reading ended with err, once: the adapter's own
// requests in flight fail, and the connection's forget runs.
func (c *rawConn) ended(err error) {
	c.mu.Lock()
	if c.endErr != nil {
		c.mu.Unlock()
		return
	}
	c.endErr = err
	forget := c.forget
	c.mu.Unlock()
	close(c.end)
	if forget != nil {
		forget()
	}
}

// whenEnded arranges for forget to run once reading ends, at once when
// it has.
func (c *rawConn) whenEnded(forget func()) {
	c.mu.Lock()
	if c.endErr == nil {
		c.forget = forget
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	forget()
}

// take removes and returns the sink of request id (nil when none), and
// stops its clean-up.
func (c *rawConn) take(id jsonrpc.ID) rawSink {
	c.mu.Lock()
	p, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		return nil
	}
	p.stop()
	return p.sink
}

// rawResponses is an http.RoundTripper whose requests sent with a
// rawSink (the SDK's streamable HTTP connection writes a request with
// its context) have their response read through a bodyTee.
type rawResponses struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t rawResponses) RoundTrip(r *http.Request) (*http.Response, error) {
	if wantsCoreTask(r.Context(), mcpmethod.ToolsCall) { // coretasks.go: params.task
		var err error
		if r, err = coreTaskRequest(r); err != nil {
			return nil, err
		}
	}
	resp, err := t.next.RoundTrip(r)
	if sink := rawSinkOf(r.Context()); err == nil && sink != nil && resp.StatusCode/100 == 2 {
		sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		resp.Body = &bodyTee{ReadCloser: resp.Body, sse: sse, sink: sink}
	}
	return resp, err
}

// bodyTee reads a response body for the SDK and hands the first JSON-RPC
// result in it to sink before the SDK sees the bytes that end it: the
// body of a JSON response at its end; the data of the first event of an
// event stream that is a response (HTML "Server-sent events": "data:"
// lines, an empty line ending the event).
type bodyTee struct {
	io.ReadCloser
	sse  bool
	sink rawSink
	buf  []byte // unparsed bytes: the JSON body, or the event stream's current line
	data []byte // the current event's data
	done bool   // sink called, or given up
}

// Read implements io.Reader.
func (b *bodyTee) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.done {
		b.feed(p[:n], err != nil)
	}
	return n, err
}

// feed takes the bytes read; end is true at the end of the body.
func (b *bodyTee) feed(p []byte, end bool) {
	if len(b.buf)+len(b.data)+len(p) > maxRawResult {
		b.done, b.buf, b.data = true, nil, nil
		return
	}
	b.buf = append(b.buf, p...)
	if !b.sse {
		if end {
			b.deliver(b.buf)
		}
		return
	}
	for !b.done {
		i := bytes.IndexByte(b.buf, '\n')
		if i < 0 {
			break
		}
		line := bytes.TrimSuffix(b.buf[:i], []byte("\r"))
		b.buf = b.buf[i+1:]
		switch {
		case len(line) == 0: // the event ends
			b.deliver(b.data)
			b.data = b.data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(b.data) > 0 {
				b.data = append(b.data, '\n')
			}
			b.data = append(b.data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
		}
	}
}

// deliver hands msg's result to the sink when msg is a JSON-RPC
// response with a result.
func (b *bodyTee) deliver(msg []byte) {
	var m struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if len(msg) == 0 || json.Unmarshal(msg, &m) != nil || m.Method != "" || len(m.Result) == 0 {
		return
	}
	b.done = true
	b.sink(bytes.Clone(m.Result))
}

// rawTools adds to defs each tool of raw, a tools/list result (one page),
// as the server wrote it (a JSON object), by name, and to support each
// tool's execution.taskSupport. A name listed twice maps to nil in defs:
// its definitions cannot be told apart. An entry that is not an object
// is left out (the SDK refuses the page anyway).
func rawTools(raw json.RawMessage, defs map[string]json.RawMessage, support map[string]string) {
	var page struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(raw, &page) != nil {
		return
	}
	for _, def := range page.Tools {
		var t struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		}
		if !bytes.HasPrefix(def, []byte("{")) || json.Unmarshal(def, &t) != nil {
			continue
		}
		if t.Execution != nil && t.Execution.TaskSupport != "" {
			support[t.Name] = t.Execution.TaskSupport
		}
		if _, twice := defs[t.Name]; twice {
			defs[t.Name] = nil
			continue
		}
		defs[t.Name] = def
	}
}

// rawItems returns the entries of raw's member (raw a list result, one
// page: member "resources", "resourceTemplates", "prompts") as the
// server wrote them; nil when raw is not such an object. Entries that
// are not objects are left out (the SDK refuses the page anyway).
func rawItems(raw json.RawMessage, member string) []json.RawMessage {
	var page map[string]json.RawMessage
	var items []json.RawMessage
	if json.Unmarshal(raw, &page) != nil || json.Unmarshal(page[member], &items) != nil {
		return nil
	}
	return slices.DeleteFunc(items, func(it json.RawMessage) bool { return !bytes.HasPrefix(it, []byte("{")) })
}
