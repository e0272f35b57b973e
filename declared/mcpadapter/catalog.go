package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/internal/mcpsession"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
)

// The server's resources, resource templates and prompts are the
// adapter's MCP catalog (plugin protocol 3, pluginsdk.Cataloger), which
// the host serves on /mcp beside the tools, unchanged (MCP to MCP: no
// conversion; each item and result as the server wrote it, raw.go):
//
//	server                              adapter
//	resources/list, resources/          listed (every page, at most maxTools of
//	templates/list, prompts/list        each) after the tools when the server has
//	                                    the capability, and again after
//	                                    notifications/resources/list_changed or
//	                                    prompts/list_changed (CatalogChanged then
//	                                    reports a change when the lists differ)
//	capabilities completions,           Catalog.Completions, Catalog.Subscribe
//	resources.subscribe
//	notifications/resources/updated     on the shared session: CatalogChanged reports
//	                                    the URI; on a client's own session: to that
//	                                    client (mcpsession.Session.Updated)
//	resources/read, resources/          HandleMCP sends the request as it came and
//	subscribe, resources/unsubscribe,   returns the server's result, or its JSON-RPC
//	prompts/get, completion/complete    error as it is (code, message, data); a
//	                                    client's subscribe and unsubscribe on its
//	                                    own session, the rest on it once it has
//	                                    one, else on the shared one
//	                                    (catalogSession)
//	tools/list (a client's own          HandleMCP "tools/list" (clientTools): the
//	upstream session, clients.go)       tools the server lists to the MCP client
//	                                    on the request's context

// catalogBuffer is how many catalog changes may wait for the host.
const catalogBuffer = 256

var (
	_ pluginsdk.Cataloger      = (*Adapter)(nil)
	_ pluginsdk.CatalogWatcher = (*Adapter)(nil)
)

// Catalog implements pluginsdk.Cataloger: the server's resources,
// templates and prompts as last listed, once connected, and SharedTools
// for a server declared "sessions": "shared" (Options.Shared: clientTools
// lists no client its own tools). Errors: the connection attempt's (code
// 500).
func (a *Adapter) Catalog(ctx context.Context) (*pluginsdk.Catalog, error) {
	if err := a.connected(ctx); err != nil {
		return nil, pluginsdk.ToolFailure("%v", err)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	c := a.cat
	c.SharedTools = a.opts.Shared
	c.Subscribe = c.Subscribe && !a.perUser() // peruser.go
	return &c, nil
}

// CatalogChanged implements pluginsdk.CatalogWatcher.
func (a *Adapter) CatalogChanged() <-chan pluginsdk.CatalogChange { return a.catChanged }

// HandleMCP implements pluginsdk.Cataloger: handleMCP for no caller's
// client (the host asks RequestDirect, with its caller's).
func (a *Adapter) HandleMCP(ctx context.Context, method string, params json.RawMessage) (any, error) {
	return a.handleMCP(ctx, nil, method, params)
}

// RequestDirect implements supervise.Direct: handleMCP for the MCP client
// of x, its result encoded. Errors: handleMCP's, as *wire.RPCError.
func (a *Adapter) RequestDirect(ctx context.Context, x *core.Exchange, method string, params []byte) ([]byte, error) {
	res, err := a.handleMCP(ctx, x, method, params)
	if err != nil {
		return nil, rpcError(err)
	}
	if raw, ok := res.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, &wire.RPCError{Code: jsonrpc.CodeInternalError, Message: method + ": the result does not encode: " + err.Error()}
	}
	return b, nil
}

// rpcError is err, a *pluginsdk.RPCError (or any error: -32603), as a
// *wire.RPCError.
func rpcError(err error) *wire.RPCError {
	var re *pluginsdk.RPCError
	if errors.As(err, &re) {
		return &wire.RPCError{Code: re.Code, Message: re.Message, Data: re.Data}
	}
	return &wire.RPCError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// handleMCP answers a catalog request for the MCP client of x (nil:
// none): tools/list is the tools the server lists to that client
// (clientTools); any other method
// is sent to the server with params as they came; its result as the
// server wrote it (a json.RawMessage, members no SDK type holds
// included) once the SDK has decoded it, which checks its shape.
// Errors: the server's JSON-RPC error as an *pluginsdk.RPCError; -32601 for a method that is not one of the
// catalog's; -32603 for the connection's failure.
func (a *Adapter) handleMCP(ctx context.Context, x *core.Exchange, method string, params json.RawMessage) (any, error) {
	if err := a.connected(ctx); err != nil {
		return nil, &pluginsdk.RPCError{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if a.perUser() && method != mcpmethod.ToolsList { // the caller's own user (peruser.go)
		if method == mcpmethod.ResourcesSubscribe || method == mcpmethod.ResourcesUnsubscribe {
			return nil, &pluginsdk.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("MCP server %q: %s is not served for per-user credentials", a.launch.Name, method)}
		}
		u, release, err := a.userFor(ctx, x)
		if err != nil {
			return nil, loginRPCError(a.launch.Name, method, err)
		}
		defer release()
		return u.handleMCP(ctx, x, method, params)
	}
	sess := a.catalogCaller(ctx, x, method)
	defer a.holdOf(sess)()
	if method == mcpmethod.ToolsList {
		return a.clientTools(ctx, x)
	}
	cs, err := a.catalogSession(ctx, x, sess, method)
	if err != nil {
		return nil, rpcErrorOf(a.launch.Name, method, err)
	}
	if cs == nil { // resources/unsubscribe of a client without a session of its own: nothing to end
		return struct{}{}, nil
	}
	var res any
	var raw json.RawMessage // the result as the server wrote it (raw.go)
	ctx = withRawResult(ctx, func(r json.RawMessage) { raw = r })
	switch method {
	case mcpmethod.ResourcesRead:
		var p mcp.ReadResourceParams
		if err = decodeParams(params, &p); err == nil {
			res, err = cs.ReadResource(ctx, &p)
		}
	case mcpmethod.ResourcesSubscribe:
		var p mcp.SubscribeParams
		if err = decodeParams(params, &p); err == nil {
			err = cs.Subscribe(ctx, &p)
			res = struct{}{}
		}
	case mcpmethod.ResourcesUnsubscribe:
		var p mcp.UnsubscribeParams
		if err = decodeParams(params, &p); err == nil {
			err = cs.Unsubscribe(ctx, &p)
			res = struct{}{}
		}
	case mcpmethod.PromptsGet:
		var p mcp.GetPromptParams
		if err = decodeParams(params, &p); err == nil {
			res, err = cs.GetPrompt(ctx, &p)
		}
	case mcpmethod.CompletionComplete:
		var p mcp.CompleteParams
		if err = decodeParams(params, &p); err == nil {
			res, err = cs.Complete(ctx, &p)
		}
	default:
		return nil, &pluginsdk.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%s is not a catalog request", method)}
	}
	if err != nil {
		return nil, rpcErrorOf(a.launch.Name, method, err)
	}
	if raw != nil { // the SDK decoded it: a valid result, relayed as written
		return raw, nil
	}
	return res, nil
}

// catalogCaller is the client session a catalog request method of x's
// caller is served as: x's own (core.Exchange.Session); for a read, a
// prompt or a completion of a caller without one, its key's when its
// calls made one (callerSession: so that it reads what they left),
// never for a subscription (such a caller has no stream to be told on:
// the shared session's) nor tools/list (the shared list); nil: none.
func (a *Adapter) catalogCaller(ctx context.Context, x *core.Exchange, method string) *mcpsession.Session {
	switch method {
	case mcpmethod.ResourcesRead, mcpmethod.PromptsGet, mcpmethod.CompletionComplete:
		return a.callerSession(ctx, x, false)
	}
	return x.ClientSession()
}

// catalogSession returns the session method goes to: for a caller of
// 2026-07-28, the session of that revision (sessionless.go); for the
// client session sess (catalogCaller: x's own, or the key's of a caller
// without one) of a per-client server (clients.go): resources/subscribe
// to its own session, made now if it has none (MCP "Resources",
// Subscriptions: the server then sends its
// notifications/resources/updated on it, which reach that client only),
// marked on its Exchange (core.Exchange.MarkOwn) unless no place is free
// for it (placeFor: the shared session then takes it);
// resources/unsubscribe to its own session, nil when it has none (ended
// with its server, or never made: nothing is subscribed there); any
// other (resources/read, prompts/get, completion/complete) to its own
// session when it has one (the server's state of that client), else
// the shared session, none being made for it. Everything else (sess
// nil): the shared session. Errors: sessionlessFor's and sessionOf's
// (ctx's, the adapter stopped, the connection's failure).
func (a *Adapter) catalogSession(ctx context.Context, x *core.Exchange, sess *mcpsession.Session, method string) (*mcp.ClientSession, error) {
	u, err := a.sessionlessFor(ctx, x)
	if err != nil {
		return nil, err
	}
	if u != nil {
		return u.cs, nil // a caller of 2026-07-28: its params (_meta, retry) go as they came (sessionless.go)
	}
	if sess == nil || a.opts.Shared {
		return a.sharedSession(ctx)
	}
	switch method {
	case mcpmethod.ResourcesSubscribe:
		cs, _, how, err := a.sessionOf(ctx, sess)
		if err == nil && how == servedOwn {
			x.MarkOwn()
			a.subscribed(sess)
		}
		return cs, err
	case mcpmethod.ResourcesUnsubscribe:
		x.MarkOwn()
		return a.ownSession(ctx, sess)
	}
	// A read, a prompt, a completion: the client's own session once it has
	// one (what the server keeps per session is that client's), else the
	// shared one; none is made for it.
	cs, err := a.ownSession(ctx, sess)
	if err != nil || cs != nil {
		return cs, err
	}
	return a.sharedSession(ctx)
}

// decodeParams decodes a request's params. Errors: a -32602
// *pluginsdk.RPCError.
func decodeParams(params json.RawMessage, v any) error {
	if len(params) == 0 {
		return nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &pluginsdk.RPCError{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()}
	}
	return nil
}

// rpcErrorOf is the error a client of the host gets for err, the
// failure of method on server: the server's JSON-RPC error as it is,
// anything else -32603 naming the server.
func rpcErrorOf(server, method string, err error) error {
	if re, ok := wire.AsRPCError(err); ok {
		return re
	}
	return &pluginsdk.RPCError{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("MCP server %q: %s: %v", server, method, err)}
}

// listCatalog lists the server's resources, templates and prompts (each
// when the server has the capability, every page) and stores them as
// the catalog, each item as the server wrote it (Catalog.Raw); changed
// reports whether it differs from the one before. Errors are the SDK's.
func (a *Adapter) listCatalog(ctx context.Context, cs *mcp.ClientSession) (changed bool, err error) {
	var c pluginsdk.Catalog
	raw := &pluginsdk.RawCatalog{}
	caps := &mcp.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	if caps.Resources != nil {
		if c.Resources, raw.Resources, err = collect(ctx, "resources", cs.Resources); err != nil {
			return false, fmt.Errorf("resources/list: %w", err)
		}
		if c.ResourceTemplates, raw.ResourceTemplates, err = collect(ctx, "resourceTemplates", cs.ResourceTemplates); err != nil {
			return false, fmt.Errorf("resources/templates/list: %w", err)
		}
		c.Subscribe = caps.Resources.Subscribe
	}
	if caps.Prompts != nil {
		if c.Prompts, raw.Prompts, err = collect(ctx, "prompts", cs.Prompts); err != nil {
			return false, fmt.Errorf("prompts/list: %w", err)
		}
	}
	c.Completions = caps.Completions != nil
	c.Raw = raw
	a.mu.Lock()
	defer a.mu.Unlock()
	changed = !reflect.DeepEqual(a.cat, c)
	a.cat = c
	return changed, nil
}

// collect gathers a list's items (every page of list), at most
// maxTools, as the SDK decodes them and as the server wrote them: each
// page's raw result's member (raw.go), in order. When a page's raw
// result did not reach the sink (over maxRawResult) the raw items are
// the SDK's, encoded. Errors: the iterator's, or too many items.
func collect[T, P any](ctx context.Context, member string, list func(context.Context, *P) iter.Seq2[T, error]) ([]T, []json.RawMessage, error) {
	var raw []json.RawMessage
	lctx := withRawResult(ctx, func(page json.RawMessage) { raw = append(raw, rawItems(page, member)...) })
	var out []T
	for it, err := range list(lctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		if len(out) == maxTools {
			return nil, nil, fmt.Errorf("more than %d items", maxTools)
		}
		out = append(out, it)
	}
	if len(raw) != len(out) {
		raw = raw[:0]
		for _, it := range out {
			b, _ := json.Marshal(it) // decoded by the SDK: encodes
			raw = append(raw, b)
		}
	}
	return out, raw, nil
}

// catalogChanged reports ch to the host without blocking; a change the
// host has not taken yet is dropped with a log line when the buffer is
// full.
func (a *Adapter) catalogChanged(ch pluginsdk.CatalogChange) {
	select {
	case a.catChanged <- ch:
	default:
		a.log.Warn("catalog change dropped: the host is not taking them", "server", a.launch.Name, "uri", ch.URI)
	}
}
