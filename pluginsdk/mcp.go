package pluginsdk

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/mcpresult"
	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/protocol/mcpmethod"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// What a plugin can say beyond a result object, as MCP says it (plugin
// protocol 3, docs/plugin-protocol.md): results made of content blocks
// (an image, audio, a resource), progress and log messages during a
// call, and requests to the MCP client that made the call (sampling,
// elicitation, roots). The host relays each to the caller when the
// caller is an MCP client of its /mcp (or stdio) endpoint; OpenTool and
// Open Tool Calling callers get the projection of the result documented
// in docs/writing-plugins.md, and no messages.

// Result is a unary call's result: an MCP tool result, or an OpenTool
// result object.
type Result struct {
	// MCP is the result as an MCP CallToolResult (MCP 2025-11-25
	// "Tools", Tool Result: content blocks of type text, image, audio,
	// resource_link or resource, each with annotations; structuredContent;
	// isError; _meta). MCP clients of the host receive it as it is;
	// OpenTool callers its projection (structuredContent, or
	// {"content":[...],"text":...}; isError is a tool error 500).
	MCP *mcp.CallToolResult
	// MCPJSON, when set, is MCP's JSON as it was received (a JSON object
	// of valid UTF-8: the result of an MCP server, with members this SDK
	// does not know): MCP clients of the host receive these bytes as
	// they are; MCP must be set too (OpenTool callers get its
	// projection).
	MCPJSON []byte
	// Object is an OpenTool result object, JSON ({} when empty), used
	// when MCP is nil.
	Object []byte
}

// ResultCaller may be implemented by a Tool whose unary functions return
// MCP tool results (Toolkit does, for functions made with ResultFunc;
// the MCP server adapter does). When a Tool implements it, CallResult is
// used for unary calls instead of CallJSON and Call.
type ResultCaller interface {
	// CallResult runs unary function name with args (the JSON object of
	// arguments; nil or empty for none). Errors are as for Tool.Call.
	CallResult(ctx context.Context, name string, args []byte) (Result, error)
}

// ResultFunc builds a Function named name that runs fn, whose result is
// an MCP tool result: text, images, audio, resource links and embedded
// resources, with structuredContent and isError as fn sets them.
//
//	pluginsdk.ResultFunc("chart", "Draws a chart as a PNG.",
//		func(ctx context.Context, in ChartIn) (*mcp.CallToolResult, error) {
//			png := draw(in)
//			return &mcp.CallToolResult{Content: []mcp.Content{
//				&mcp.TextContent{Text: "the chart"},
//				&mcp.ImageContent{Data: png, MIMEType: "image/png"},
//			}}, nil
//		})
//
// In and its arguments are as for Func. The function has no return
// schema. MCP clients of the host receive the result as fn returned it;
// OpenTool callers its projection (ResultCaller). A nil result is an
// empty one ({"content":[]}). An error from fn is a tool error, as for
// Func; a result with IsError reaches MCP clients as it is and OpenTool
// callers as tool error 500 with its text.
//
// ResultFunc panics on the same programmer errors as Func.
func ResultFunc[In any](name, description string, fn func(context.Context, In) (*mcp.CallToolResult, error)) Function {
	params, required, in, root, err := parametersOf(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("pluginsdk: ResultFunc %q: input: %v", name, err))
	}
	result := func(ctx context.Context, args []byte) (*mcp.CallToolResult, error) {
		var arg In
		if err := decodeInput(args, required, root, &arg); err != nil {
			return nil, err
		}
		res, err := fn(ctx, arg)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		return res, nil
	}
	return Function{
		def: opentool.Function{
			Name:                 name,
			Description:          description,
			Parameters:           params,
			AdditionalParameters: new(false),
			InputSchema:          in,
		},
		call: func(ctx context.Context, args []byte) ([]byte, error) {
			res, err := result(ctx, args)
			if err != nil {
				return nil, err
			}
			return ProjectResult(res)
		},
		result: result,
	}
}

// CallResult implements ResultCaller: a function made with ResultFunc
// returns its MCP result, any other unary function its result object
// (as CallJSON). Errors are CallJSON's.
func (tk *Toolkit) CallResult(ctx context.Context, name string, args []byte) (Result, error) {
	f, err := tk.lookup(name)
	if err != nil {
		return Result{}, err
	}
	if f.result != nil {
		res, err := f.result(ctx, args)
		return Result{MCP: res}, err
	}
	out, err := tk.CallJSON(ctx, name, args)
	return Result{Object: out}, err
}

var _ ResultCaller = (*Toolkit)(nil)

// ProjectResult is the OpenTool result object of MCP result res, as the
// host gives it to OpenTool callers (docs/writing-plugins.md): its
// structuredContent when that is an object, {"result": VALUE} for another
// structuredContent, else {"content": [BLOCKS], "text": TEXT}. Errors: a
// code-500 *Error with the result's text when res.IsError; code 500 when
// res cannot be encoded.
func ProjectResult(res *mcp.CallToolResult) ([]byte, error) {
	obj, err := mcpresult.ProjectDecoded(res)
	if err != nil {
		return nil, ToolFailure("%s", err.Error())
	}
	return obj, nil
}

// encodeMCPResult encodes res (mcpresult.Encode: content [] rather than
// null, as MCP requires an array). Errors: a code-500 *Error.
func encodeMCPResult(res *mcp.CallToolResult) ([]byte, error) {
	b, err := mcpresult.Encode(res)
	if err != nil {
		return nil, ToolFailure("%v", err)
	}
	return b, nil
}

// The call's messages to its caller (plugin protocol 3). Each function
// takes the context the SDK handed the tool's method (Call, CallJSON,
// CallResult, StreamCall, or a Toolkit function) and does nothing, or
// fails with an error saying why, when the host speaks protocol 2 or the
// caller cannot take them.

type peerKey struct{}

// withPeer returns ctx carrying the call's peer.
func withPeer(ctx context.Context, p *wire.Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// peerOf returns the peer of the call ctx belongs to, nil outside a call.
func peerOf(ctx context.Context) *wire.Peer {
	p, _ := ctx.Value(peerKey{}).(*wire.Peer)
	return p
}

// CallerMeta returns the _meta of the MCP request that made the call ctx
// belongs to (MCP "Basic Protocol", _meta: the progressToken, trace
// context and the client's own keys), nil when there is none: the caller
// is not an MCP client, sent none, or the host speaks protocol 2.
func CallerMeta(ctx context.Context) map[string]any {
	return wire.DecodeMeta(peerOf(ctx).Meta())
}

// Progress reports the progress of the call ctx belongs to (MCP
// 2025-11-25 "Utilities: Progress"): progress so far, total when known
// (0: unknown) and a message. The caller receives it as
// notifications/progress with its own progress token; when it asked for
// no progress (no progressToken in its _meta) nothing is sent. Errors:
// the transport's (the call is over).
func Progress(ctx context.Context, progress, total float64, message string) error {
	p := peerOf(ctx)
	token, ok := CallerMeta(ctx)["progressToken"]
	if !p.V3() || !ok {
		return nil
	}
	b, err := json.Marshal(&mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: message})
	if err != nil {
		return ToolFailure("progress: %v", err)
	}
	return p.Notify(mcpmethod.Progress, b)
}

// Log sends a log message to the caller of the call ctx belongs to (MCP
// 2025-11-25 "Server Utilities: Logging", notifications/message): level
// ("debug", "info", "notice", "warning", "error", "critical", "alert",
// "emergency"), the logger's name (may be empty) and data (any JSON
// value). The host forwards it when the level is at or above the one the
// client set with logging/setLevel, and drops it otherwise. Errors: an
// unknown level; data that cannot be encoded; the transport's.
func Log(ctx context.Context, level mcp.LoggingLevel, logger string, data any) error {
	if !validLevel(level) {
		return InvalidArguments("log level %q is not one of MCP's", level)
	}
	p := peerOf(ctx)
	if !p.V3() {
		return nil
	}
	b, err := json.Marshal(&mcp.LoggingMessageParams{Level: level, Logger: logger, Data: data})
	if err != nil {
		return ToolFailure("log: %v", err)
	}
	return p.Notify(mcpmethod.LoggingMessage, b)
}

// validLevel reports whether l is an MCP log level (RFC 5424 severities).
func validLevel(l mcp.LoggingLevel) bool {
	switch l {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return true
	}
	return false
}

// Notify sends MCP notification method with params (encoded to JSON;
// nil for none) to the caller of the call ctx belongs to. Progress and
// Log are the usual ones; the host relays notifications/progress and
// notifications/message and drops others. Errors: params that cannot be
// encoded; the transport's.
func Notify(ctx context.Context, method string, params any) error {
	p := peerOf(ctx)
	if !p.V3() {
		return nil
	}
	b, err := encodeParams(params)
	if err != nil {
		return err
	}
	return p.Notify(method, b)
}

// ClientRequest sends MCP request method (sampling/createMessage,
// elicitation/create or roots/list, MCP 2025-11-25 "Client Features")
// with params (encoded to JSON) to the MCP client that made the call ctx
// belongs to, waits for its answer and returns the result as JSON.
// Errors: the client's JSON-RPC error, or the host's when no client can
// answer (a *wire.RPCError with code -32601: an OpenTool caller, a client
// without the capability, a stateless /mcp request, a host of protocol
// 2); ctx's error.
func ClientRequest(ctx context.Context, method string, params any) (json.RawMessage, error) {
	b, err := encodeParams(params)
	if err != nil {
		return nil, err
	}
	return peerOf(ctx).Request(ctx, method, b)
}

// encodeParams encodes params (nil: none).
func encodeParams(params any) ([]byte, error) {
	if params == nil {
		return nil, nil
	}
	if raw, ok := params.(json.RawMessage); ok {
		return raw, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, ToolFailure("encode params: %v", err)
	}
	return b, nil
}

// Elicit asks the user of the MCP client that made the call ctx belongs
// to for input (MCP 2025-11-25 "Client Features: Elicitation",
// elicitation/create) and returns the answer. Errors: as ClientRequest.
func Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	var res mcp.ElicitResult
	if err := typedRequest(ctx, mcpmethod.ElicitationCreate, params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// CreateMessage asks the MCP client that made the call ctx belongs to
// for a completion from its model (MCP 2025-11-25 "Client Features:
// Sampling", sampling/createMessage). Errors: as ClientRequest.
func CreateMessage(ctx context.Context, params *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	var res mcp.CreateMessageResult
	if err := typedRequest(ctx, mcpmethod.SamplingCreateMessage, params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListRoots asks the MCP client that made the call ctx belongs to for
// its roots (MCP 2025-11-25 "Client Features: Roots", roots/list).
// Errors: as ClientRequest.
func ListRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	var res mcp.ListRootsResult
	if err := typedRequest(ctx, mcpmethod.RootsList, &mcp.ListRootsParams{}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// typedRequest is ClientRequest decoding the result into out.
func typedRequest(ctx context.Context, method string, params, out any) error {
	raw, err := ClientRequest(ctx, method, params)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return ToolFailure("%s: the client's result: %v", method, err)
	}
	return nil
}
