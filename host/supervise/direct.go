package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpresult"
	"github.com/opentool-host/opentool-host/internal/wire"
)

// Direct is implemented by a declared plugin served in the host's
// process (the wire.Local core.Config.Declared returns) whose unary calls
// and MCP requests supervision makes as plain function calls on the
// caller's goroutine, with the caller's core.Exchange as it is: no
// CallFrame, stream, channel or encoding between the call path and the
// plugin, and the plugin reaches the caller's messages (Notify, Request)
// and MCP client (Session, Sessionless) through that Exchange alone
// (declared/mcpadapter.Adapter, the host's own MCP client of a declared
// server; declared/cmdtool.Tool). A streaming call still goes through
// the wire.Local. Both methods must return soon after ctx ends: a call
// cannot be abandoned while it runs (past Config.CancelGrace the plugin
// is killed, as a process that ignores a cancel).
type Direct interface {
	// CallDirect runs unary function name (as the plugin declares it)
	// with args, a JSON object (nil or empty for none), for the caller of
	// x (nil: none). Its result is an OpenTool result object
	// (DirectResult.Object) or an MCP CallToolResult, decoded
	// (DirectResult.MCP) or JSON (DirectResult.MCPJSON).
	// Errors: a *wire.ToolError (the tool's own code and message, Exited
	// when the plugin's program ended, Login when its caller must log in
	// first); any other error is the transport's.
	CallDirect(ctx context.Context, x *core.Exchange, name string, args []byte) (DirectResult, error)
	// RequestDirect answers MCP request method with params (JSON) from
	// the plugin's catalog for the caller of x (nil: none). Errors: a
	// *wire.RPCError.
	RequestDirect(ctx context.Context, x *core.Exchange, method string, params []byte) ([]byte, error)
}

// DirectResult is a unary call's result from a Direct plugin: one of
// its fields is set.
type DirectResult struct {
	// Object is an OpenTool result object, JSON.
	Object []byte
	// MCP is an MCP CallToolResult, decoded: the caller takes it as it
	// is (host.Result.Decoded) or its projection.
	MCP *mcp.CallToolResult
	// MCPJSON is a plain MCP CallToolResult (mcpresult.Plain passed it),
	// JSON (the plugin's own bytes, not written again): taken as a plugin
	// process's MCP result is (checked as one JSON object, host.Result.JSON
	// with MCP), and marked plain (host.Result.Plain).
	MCPJSON []byte
}

// errDirectStopped ends a Direct call of a plugin stopped while it ran.
var errDirectStopped = errors.New("local plugin stopped: the plugin was stopped during the call")

// direct returns the instance's plugin as a Direct, nil when it is not
// one (a plugin process, or a declared plugin served through its
// wire.Local alone).
func (i *instance) direct() Direct {
	if i.local == nil {
		return nil
	}
	d, _ := i.local.plugin.(Direct)
	return d
}

// sendDirect runs unary call r on d on this goroutine, within timeout
// when > 0 (0: ctx has the call's deadline). Its one context
// (directCall) ends with ctx, at the deadline and when the plugin is
// stopped; its guard kills the plugin when the call outlives ctx or the
// deadline by the cancel grace. Its result is checked (Accept, and
// Config.MaxResultBytes: an MCP result by its size, mcpresult.Size) and
// handed to r.
func (i *instance) sendDirect(ctx context.Context, r Request, d Direct, timeout time.Duration) error {
	c := i.beginDirect(ctx, r.Function(), timeout)
	inv := r.Invocation()
	res, err := d.CallDirect(c, r.Exchange(), strings.TrimPrefix(inv.Name, i.prefix), inv.Args)
	killed, why := c.finish()
	if i.local.done.Err() != nil {
		err = errDirectStopped
	}
	if why == endCaller || why == endDeadline {
		ctx = c // the call's errors say it timed out or was canceled
	}
	switch {
	case err != nil:
		return i.endError(ctx, r, err, 0, killed)
	case res.MCP == nil && res.Object == nil && res.MCPJSON == nil:
		return i.endError(ctx, r, io.EOF, 0, killed)
	}
	return i.acceptDirect(ctx, r, res)
}

// acceptDirect checks res and hands it to r. Errors: r's (a result
// rejected, Emit's), a result over Config.MaxResultBytes.
func (i *instance) acceptDirect(ctx context.Context, r Request, res DirectResult) error {
	n := len(res.Object) + len(res.MCPJSON)
	if res.MCP != nil {
		n = mcpresult.Size(res.MCP)
	}
	if i.maxResult > 0 && int64(n) > i.maxResult {
		return i.endError(ctx, r, fmt.Errorf("%w: %d bytes, limit %d", wire.ErrResultTooLarge, n, i.maxResult), 0, false)
	}
	core.MemTrim.Note(n)
	item := res.Object
	switch {
	case res.MCP != nil:
		r.EmitMCP(res.MCP, n)
		return nil
	case res.MCPJSON != nil:
		r.SetMCP(true)
		item = res.MCPJSON
	}
	if err := r.Accept(i.name, item, 1); err != nil {
		return err
	}
	return r.Emit(item)
}
