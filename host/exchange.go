package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpresult"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// What a call carries beyond its result, for plugins of protocol 3
// (internal/wire, message.go; docs/plugin-protocol.md): the caller's MCP
// _meta goes to the plugin; the plugin's notifications (progress, log
// messages) and requests (sampling, elicitation, roots) come back on the
// call's own stream, in order with its result, and go to the caller's
// Exchange; a unary result may be an MCP CallToolResult (CallResult).
// A caller without an Exchange (OpenTool /call, Open Tool Calling, the
// CLI) gets no notifications, its plugins' requests are answered with
// JSON-RPC error -32601 naming the method, and MCP results reach it as
// their projection (Call, internal/mcpresult).

// collecting returns x as a call whose items the host collects into one
// result sees it: when x is told of each item (Item set: the caller
// asked for progress), the items are the call's progress, so the
// plugin's own notifications/progress are dropped and its other
// notifications reach x.Notify as they are; a caller would otherwise get
// each progress value twice (the plugin's, then its item's), where MCP
// requires progress to increase. x itself is left as it is; nil and an x
// without Item or Notify are returned as they are.
func collecting(x *core.Exchange) *core.Exchange {
	if x == nil || x.Item == nil || x.Notify == nil {
		return x
	}
	c := *x
	c.Notify = func(method string, params []byte) {
		if method != methodProgress {
			x.Notify(method, params)
		}
	}
	return &c
}

// methodProgress is the MCP progress notification's method.
const methodProgress = mcpmethod.Progress

// RPCError is a JSON-RPC 2.0 error object, as a plugin's request gets it
// back (Exchange.Request) and as Host.Request returns a plugin's.
type RPCError = wire.RPCError

// JSON-RPC error codes (JSON-RPC 2.0, section 5.1) of the host's own
// RPCErrors.
const (
	// CodeMethodNotFound: nobody can answer the request.
	CodeMethodNotFound = wire.CodeMethodNotFound
	// CodeInternalError: the relay failed.
	CodeInternalError = wire.CodeInternalError
)

// Result is a unary call's result as the plugin returned it
// (CallResult).
type Result struct {
	// JSON is the result: an OpenTool result object, or with MCP an MCP
	// CallToolResult (MCP 2025-11-25 "Tools", Tool Result) as a plugin
	// process sent it; nil when Decoded is set.
	JSON []byte
	// MCP reports that the result is an MCP CallToolResult (a plugin of
	// protocol 3 returned content blocks, structuredContent, isError).
	MCP bool
	// Plain, with MCP and JSON, reports that JSON is a plain result
	// (mcpresult.Plain: text blocks and isError only), as the plugin
	// served in the host's process that returned it checked
	// (supervise.DirectResult.MCPJSON): it may go to an MCP client as it
	// is. A plugin process's result is not looked at: false.
	Plain bool
	// Decoded, with MCP, is the result itself from a plugin served in
	// the host's process (supervise.Direct: a declared MCP server's, as
	// the MCP SDK's client decoded the server's answer, the one decoding
	// on its way to the caller); nil otherwise. It is the caller's alone.
	Decoded *mcp.CallToolResult
}

// CallResult is Call for front ends that take MCP results as the plugin
// returned them (mcpapi), with x the caller's side of the call's messages
// and its MCP client (core.Exchange; nil for none): the same call path,
// the result unprojected. Errors: as Call's, except that an MCP result
// with isError is a Result, not a KindTool error.
func (h *Host) CallResult(ctx context.Context, x *core.Exchange, fn string, args []byte) (Result, error) {
	r := &request{fn: fn, args: args, x: x}
	if err := h.invoke(ctx, r); err != nil {
		return Result{}, err
	}
	res, n := r.result, len(r.result)
	if r.decoded != nil {
		n = r.decodedSize
	}
	if !charge(ctx, n) {
		core.MemTrim.Note(n)
		return Result{}, h.errResultMemory(fn, n)
	}
	return Result{JSON: res, MCP: r.mcp, Plain: r.plain, Decoded: r.decoded}, nil
}

// project is the OpenTool result object of r's MCP result (its JSON, or
// the result decoded: internal/mcpresult): an isError result is the
// tool's error 500 with its text; a result that is not a CallToolResult
// is rejected.
func (r *request) project() ([]byte, error) {
	var obj []byte
	var err error
	if r.decoded != nil {
		obj, err = mcpresult.ProjectDecoded(r.decoded)
	} else {
		obj, err = mcpresult.Project(r.result)
	}
	if err == nil {
		return obj, nil
	}
	if te, ok := errors.AsType[*mcpresult.ToolError](err); ok {
		return nil, &core.Error{Kind: core.KindTool, Function: r.fn, Plugin: r.plugin, Code: 500, Message: te.Message}
	}
	return nil, r.Fail(core.KindResultRejected, r.plugin, "the plugin's MCP result is "+err.Error(), err)
}

// Message handles message m the plugin sent on call c of r: a
// notification goes to the Exchange's Notify (in order, before what
// follows it on the stream); a request to its Request in a goroutine of
// its own, whose answer goes back on c, so that the call's stream is
// read on meanwhile.
func (r *request) Message(ctx context.Context, c *wire.Call, m *wire.Message) {
	x := r.x
	if !m.IsRequest() {
		if x != nil && x.Notify != nil {
			x.Notify(m.Method, m.Params)
		}
		return
	}
	if x == nil || x.Request == nil {
		_ = c.Reply(wire.Reply{ID: m.ID, Error: &wire.RPCError{Code: wire.CodeMethodNotFound,
			Message: fmt.Sprintf("the caller of %q is not an MCP client that can answer it", r.fn)}})
		return
	}
	go func() {
		res, err := x.Request(ctx, m.Method, m.Params)
		rep := wire.Reply{ID: m.ID, Result: res}
		if err != nil {
			var re *wire.RPCError
			if !errors.As(err, &re) {
				re = &wire.RPCError{Code: wire.CodeInternalError, Message: err.Error()}
			}
			rep = wire.Reply{ID: m.ID, Error: re}
		}
		_ = c.Reply(rep) // a call that ended takes no reply
	}()
}
