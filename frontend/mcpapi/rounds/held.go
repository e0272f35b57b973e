package rounds

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/httpguard"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// Multi-round-trip requests (MCP 2026-07-28, SEP-2322). A client of
// 2026-07-28 has no session on which a server could ask it something
// during a call. When the plugin (or the MCP server) behind its tools/call
// asks (elicitation/create, sampling/createMessage, roots/list, with the
// capability declared: else -32021, Client.CanAsk), the host holds the call
// where it waits and answers the POST with an input_required result:
//
//	{"resultType": "input_required",
//	 "inputRequests": {"r1": {"method": "elicitation/create", "params": {...}}},
//	 "requestState": "STATE"}
//
// The client retries the tools/call with "inputResponses" {"r1": ANSWER}
// and "requestState" STATE; each answer goes to the request that waits for
// it, and the retry is answered with the call's result or the next
// input_required round (a request it left unanswered is asked again).
//
// STATE names the held call, the API key that made it, the tool and when
// it expires, signed with HMAC-SHA256 under a key this process draws at
// random: a state that was changed, belongs to another key or tool, or
// has expired is refused with -32602, as is a retry without
// inputResponses. A call is held in the process that runs it (a retry
// that reaches another replica is refused the same way: "no such call")
// for at most heldTimeout between rounds, then cancelled; at most
// maxHeldCalls at once, maxHeldCallsPerKey per API key (more: the
// plugin's request fails at once with -32601, as without a session, and
// the call goes on). The
// arguments of a retry are not read again: the call goes on with its
// first ones. Progress and log messages of the rounds after the first
// have no POST to travel on and are dropped.
//
// A declared MCP server that speaks 2026-07-28 runs its rounds itself
// (declared/mcpadapter, sessionless.go): its input_required result
// reaches the client as it wrote it, and a retry whose requestState this
// host did not issue (or with inputResponses and no state) of a tool
// served from an MCP server's definition goes to it as it is, on the
// call's mcpsession.Request (serversRetry), which the front end fills.

// Bounds of held calls.
//
// A parked call keeps its place in the plugin (--max-concurrency) and, for
// an MCP server behind the host, counts as a call in flight there, while
// which the host relays no other call's server requests (its MCP client
// cannot tell which call they belong to): hence short bounds.
const (
	heldTimeout        = time.Minute           // between a round's answer and the retry
	maxHeldCalls       = 64                    // on this Layer
	maxHeldCallsPerKey = 4                     // per API key
	maxInputRequests   = 16                    // pending in one call
	inputGather        = 25 * time.Millisecond // requests that follow within it join the round
)

// heldCalls are the calls of a Layer that run across rounds. The zero
// value is ready.
type heldCalls struct {
	once   sync.Once
	secret []byte // the HMAC key of requestState

	mu    sync.Mutex
	calls map[string]*heldCall
	byKey map[string]int
}

// heldCall is one call that may run across rounds.
type heldCall struct {
	held            *heldCalls // its Layer's
	id, owner, tool string
	expires         time.Time // of its requestState, set when a round ends

	cancel context.CancelCauseFunc // ends the call
	asked  chan struct{}           // a request is pending (capacity 1)
	done   chan struct{}           // closed when res, err are set
	res    *mcp.CallToolResult
	err    error

	mu      sync.Mutex
	pending map[string]*pendingInput // by input request id, unanswered
	next    int                      // the last input request id's number
	timer   *time.Timer              // cancels the call when no retry came in time
	parked  bool                     // a round was answered: it waits for the retry
}

// pendingInput is one request of the plugin to the client, waiting.
type pendingInput struct {
	method string
	params json.RawMessage
	answer chan json.RawMessage // capacity 1
}

// heldKey is the context key of a call's *heldCall.
type heldKey struct{}

// sessionlessCall reports whether req comes from a client of 2026-07-28
// or later without a session, whose calls may run across rounds.
func sessionlessCall(req *mcp.CallToolRequest) bool {
	ss := req.Session
	if ss == nil || ss.ID() != "" {
		return false
	}
	return mcpsession.SpeaksSessionless(ss)
}

// inRounds runs tools/call req (run: the call itself, through the rest
// of the server's handlers) so that it can ask the client across rounds:
// a first request starts run detached from the POST (whose end still
// cancels it while it runs without asking), a retry with a requestState
// resumes the held call it names with its inputResponses. The retry of a
// round of a declared MCP server of 2026-07-28 (its own inputRequests
// keys and requestState, if any) runs as it is: the front end hands its
// inputResponses and requestState to the server (mcpsession.Request).
func (l *Layer) inRounds(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	name := req.Params.Name
	owner := access.GrantFrom(ctx).Name()
	state := req.Params.RequestState
	if l.serversRetry(req, name) {
		return run(ctx)
	}
	if state != "" && l.held.hostShaped(state) { // else the plugin's own (plugin.go)
		hc, err := l.held.resume(state, owner, name)
		if err != nil {
			return nil, err
		}
		if err := hc.answer(req.Params.InputResponses); err != nil {
			return nil, err
		}
		return l.held.wait(ctx, l.cfg.Down, hc)
	}
	hc := &heldCall{held: &l.held, owner: owner, tool: name, asked: make(chan struct{}, 1), done: make(chan struct{}), pending: map[string]*pendingInput{}}
	// The call outlives the POST once it asks: not the POST's context
	// (httpguard.WithRequestCancel), the key's revocation.
	callCtx, cancel := context.WithCancelCause(httpguard.Unbind(context.WithoutCancel(ctx)))
	callCtx, unbind := access.UntilRevoked(callCtx)
	hc.cancel = cancel
	// A call parked between rounds is in flight on no request: the host's
	// shutdown ends it (its retry could not reach this process).
	stopDown := context.AfterFunc(l.cfg.Down, func() {
		if hc.isParked() {
			cancel(errShuttingDown)
		}
	})
	go func() {
		defer stopDown()
		defer unbind()
		hc.res, hc.err = run(context.WithValue(callCtx, heldKey{}, hc))
		close(hc.done)
		l.held.forget(hc)
	}()
	return l.held.wait(ctx, l.cfg.Down, hc)
}

// wait answers the POST of ctx for hc: its result when it ends, or an
// input_required round when it asks (or still has requests unanswered).
// The POST's end cancels the call until the round is answered.
func (h *heldCalls) wait(ctx, down context.Context, hc *heldCall) (*mcp.CallToolResult, error) {
	stop := context.AfterFunc(ctx, func() { hc.cancel(context.Cause(ctx)) })
	hc.mu.Lock()
	if hc.timer != nil {
		hc.timer.Stop()
	}
	hc.parked = false
	hc.mu.Unlock()
	for !hc.waiting() {
		select {
		case <-hc.done:
			stop()
			return hc.res, hc.err
		case <-hc.asked:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	gather(hc)
	if !stop() {
		return nil, context.Cause(ctx) // the POST ended: the call is cancelled
	}
	select {
	case <-hc.done: // it ended meanwhile (its requests cancelled)
		return hc.res, hc.err
	default:
	}
	if err := h.hold(hc, down); err != nil {
		hc.cancel(err)
		<-hc.done
		return hc.res, hc.err
	}
	return hc.round(h.sign(hc))
}

// errShuttingDown ends a call parked between rounds at the host's
// shutdown.
var errShuttingDown = &host.RPCError{Code: host.CodeInternalError, Message: "the host is shutting down: the call cannot wait for its client's input"}

// isParked reports whether hc waits for its client's retry.
func (hc *heldCall) isParked() bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.parked
}

// waiting reports whether a request of hc waits for the client.
func (hc *heldCall) waiting() bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return len(hc.pending) > 0
}

// gather waits until no new request of hc has come for inputGather, so
// that requests the plugin sends together (an MCP SDK server fulfils a
// result's inputRequests at once) go in one round.
func gather(hc *heldCall) {
	t := time.NewTimer(inputGather)
	defer t.Stop()
	for {
		select {
		case <-hc.asked:
			t.Reset(inputGather)
		case <-hc.done:
			return
		case <-t.C:
			return
		}
	}
}

// round is the input_required result of hc's unanswered requests. It is
// marked input_required (resultType) the one way the SDK takes from
// outside its tools/call handler: its own decoder of a result (its
// setter is unexported), since the round is answered by the Layer's
// middleware, around that handler.
func (hc *heldCall) round(state string) (*mcp.CallToolResult, error) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	reqs := mcp.InputRequestMap{}
	for id, p := range hc.pending {
		ir, err := InputRequest(p.method, p.params)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the plugin's " + p.method + " cannot be sent as an input request: " + err.Error()}
		}
		reqs[id] = ir
	}
	b, err := json.Marshal(&mcp.CallToolResult{InputRequests: reqs, RequestState: state})
	res := new(mcp.CallToolResult)
	if err == nil {
		// b is a JSON object with inputRequests: never "{}".
		err = json.Unmarshal(append([]byte(`{"resultType":"input_required",`), b[1:]...), res)
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the input_required round does not encode: " + err.Error()}
	}
	return res, nil
}

// InputRequest decodes params (JSON, none for none) of a request to the
// client as the SDK's params of method: *mcp.ElicitParams,
// *mcp.CreateMessageWithToolsParams or *mcp.ListRootsParams (any other
// method, which Client.CanAsk lets not through). Errors: params that do
// not decode as method's.
func InputRequest(method string, params json.RawMessage) (mcp.InputRequest, error) {
	var ir mcp.InputRequest
	switch method {
	case mcpmethod.ElicitationCreate:
		ir = &mcp.ElicitParams{}
	case mcpmethod.SamplingCreateMessage:
		ir = &mcp.CreateMessageWithToolsParams{}
	default: // roots/list (CanAsk let nothing else through)
		ir = &mcp.ListRootsParams{}
	}
	if len(params) == 0 {
		return ir, nil
	}
	return ir, json.Unmarshal(params, ir)
}

// ask sends the plugin's request method (params: JSON) to the client of
// hc's call in the next round and waits for its answer (JSON), or for
// ctx, the call's, to end.
func (hc *heldCall) ask(ctx context.Context, method string, params []byte) ([]byte, error) {
	if err := hc.held.reserve(hc); err != nil {
		return nil, err // over a cap: the plugin hears it at once, the call goes on
	}
	p := &pendingInput{method: method, params: params, answer: make(chan json.RawMessage, 1)}
	hc.mu.Lock()
	if len(hc.pending) >= maxInputRequests {
		hc.mu.Unlock()
		return nil, &host.RPCError{Code: host.CodeInternalError, Message: fmt.Sprintf("more than %d requests to the client wait at once", maxInputRequests)}
	}
	hc.next++
	id := "r" + strconv.Itoa(hc.next)
	hc.pending[id] = p
	hc.mu.Unlock()
	select {
	case hc.asked <- struct{}{}:
	default:
	}
	select {
	case a := <-p.answer:
		return a, nil
	case <-ctx.Done():
		hc.mu.Lock()
		delete(hc.pending, id)
		hc.mu.Unlock()
		return nil, context.Cause(ctx)
	}
}

// answer gives each of responses to the request it answers; ids that name
// no waiting request are ignored (their requests are asked again). A
// retry without inputResponses is refused with -32602.
func (hc *heldCall) answer(responses mcp.InputResponseMap) error {
	if responses == nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: a retry with requestState must carry inputResponses"}
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for id, r := range responses {
		p, ok := hc.pending[id]
		if !ok || r == nil {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: inputResponses[%q]: %v", id, err)}
		}
		delete(hc.pending, id)
		p.answer <- b
	}
	return nil
}

// reserve registers hc, when it first asks, within the caps: over one,
// the error (-32601) for the plugin's request.
func (h *heldCalls) reserve(hc *heldCall) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.calls == nil {
		h.calls, h.byKey = map[string]*heldCall{}, map[string]int{}
	}
	if hc.id != "" {
		return nil
	}
	if len(h.calls) >= maxHeldCalls {
		return &host.RPCError{Code: host.CodeMethodNotFound, Message: fmt.Sprintf("the MCP client cannot be asked: too many calls wait for their client's input: %d", maxHeldCalls)}
	}
	if h.byKey[hc.owner] >= maxHeldCallsPerKey {
		return &host.RPCError{Code: host.CodeMethodNotFound, Message: fmt.Sprintf("the MCP client cannot be asked: too many calls of this API key wait for their client's input: %d", maxHeldCallsPerKey)}
	}
	hc.id = rand.Text()
	h.calls[hc.id] = hc
	h.byKey[hc.owner]++
	return nil
}

// hold parks hc (reserved) to wait for its retry, for heldTimeout, unless
// down (the host's shutdown) is done.
func (h *heldCalls) hold(hc *heldCall, down context.Context) error {
	if down.Err() != nil {
		return errShuttingDown
	}
	hc.mu.Lock()
	hc.parked = true
	hc.expires = time.Now().Add(heldTimeout)
	hc.timer = time.AfterFunc(heldTimeout, func() {
		hc.cancel(fmt.Errorf("no retry with the client's input within %v", heldTimeout))
	})
	hc.mu.Unlock()
	return nil
}

// forget drops hc, ended.
func (h *heldCalls) forget(hc *heldCall) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if hc.id == "" || h.calls[hc.id] != hc {
		return
	}
	delete(h.calls, hc.id)
	hc.mu.Lock()
	if hc.timer != nil {
		hc.timer.Stop()
	}
	hc.mu.Unlock()
	if h.byKey[hc.owner]--; h.byKey[hc.owner] <= 0 {
		delete(h.byKey, hc.owner)
	}
}

// stateClaims is what a requestState says, before its signature.
type stateClaims struct {
	Call    string `json:"c"`
	Key     string `json:"k"`
	Tool    string `json:"t"`
	Expires int64  `json:"e"` // Unix seconds
}

// key returns the HMAC key, drawn once.
func (h *heldCalls) key() []byte {
	h.once.Do(func() {
		h.secret = make([]byte, 32)
		_, _ = rand.Read(h.secret)
	})
	return h.secret
}

// sign is hc's requestState: base64url(JSON claims) "." base64url(HMAC).
func (h *heldCalls) sign(hc *heldCall) string {
	b, _ := json.Marshal(stateClaims{Call: hc.id, Key: hc.owner, Tool: hc.tool, Expires: hc.expires.Unix()})
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(h.mac(payload))
}

// mac is the HMAC-SHA256 of payload.
func (h *heldCalls) mac(payload string) []byte {
	m := hmac.New(sha256.New, h.key())
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// issued reports whether state carries this Layer's signature.
func (h *heldCalls) issued(state string) bool {
	payload, sig, ok := strings.Cut(state, ".")
	got, err := base64.RawURLEncoding.DecodeString(sig)
	return ok && err == nil && hmac.Equal(got, h.mac(payload))
}

// serversRetry reports whether tools/call req of tool name is the retry
// of a round the tool's MCP server ran itself: it carries inputResponses
// or a requestState, none issued by this host, and name is served from
// an MCP server's tool definition (Functions.FromMCPServer).
func (l *Layer) serversRetry(req *mcp.CallToolRequest, name string) bool {
	state := req.Params.RequestState
	if (state == "" && req.Params.InputResponses == nil) || (state != "" && l.held.issued(state)) {
		return false
	}
	return l.cfg.Functions.FromMCPServer(name)
}

// resume returns the held call state names for the caller owner of tool,
// or -32602 saying why not.
func (h *heldCalls) resume(state, owner, tool string) (*heldCall, error) {
	refuse := func(why string) error {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: requestState " + why}
	}
	if !h.issued(state) {
		return nil, refuse("was not issued by this host (tampered, or from another replica)")
	}
	payload, _, _ := strings.Cut(state, ".")
	var c stateClaims
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return nil, refuse("does not decode")
	}
	switch {
	case c.Key != owner || c.Tool != tool:
		return nil, refuse("belongs to another API key or tool")
	case time.Now().Unix() > c.Expires:
		return nil, refuse("has expired")
	}
	h.mu.Lock()
	hc := h.calls[c.Call]
	h.mu.Unlock()
	if hc == nil {
		return nil, refuse("names no call waiting here (it ended, or timed out)")
	}
	return hc, nil
}
