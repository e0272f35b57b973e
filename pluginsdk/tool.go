// Package pluginsdk is what a plugin author imports to write an OpenTool
// plugin for opentool-host.
//
// A plugin implements Tool (client/server protocol 1.0.0, section 5) and
// calls Serve from main:
//
//	func main() { pluginsdk.Serve(myTool{}) }
//
// Serve runs the tool as a hashicorp/go-plugin gRPC plugin. The host starts
// the binary, performs the handshake and calls Load, then one Invoke
// stream per call (the protocol is internal/wire's). For a typed way to
// write functions see Toolkit, Func and StreamFunc.
//
// The smallest plugin, in a module of its own:
//
//	package main
//
//	import (
//		"context"
//
//		"github.com/opentool-host/opentool-host/protocol/opentool"
//		"github.com/opentool-host/opentool-host/pluginsdk"
//	)
//
//	type In struct {
//		Name string `json:"name" jsonschema:"description=Who to greet"`
//	}
//
//	type Out struct {
//		Greeting string `json:"greeting"`
//	}
//
//	func hello(_ context.Context, in In) (Out, error) {
//		return Out{Greeting: "Hello, " + in.Name}, nil
//	}
//
//	func main() {
//		pluginsdk.Serve(pluginsdk.NewToolkit(opentool.Info{Title: "Hello", Version: "1.0.0"}).
//			Add(pluginsdk.Func("hello", "Greet someone.", hello)))
//	}
//
// Build it as opentool-plugin-hello and drop it into the host's plugins
// folder. The module is not on a proxy: in the plugin's go.mod, add
// `replace github.com/opentool-host/opentool-host => /path/to/opentool-host`
// and run `go mod tidy` (docs/writing-plugins.md has the steps).
//
// Beyond result objects (plugin protocol 3, mcp.go): MCP results with
// content blocks (ResultFunc), progress and log messages, questions to
// the calling MCP client during a call (Elicit, CreateMessage, ListRoots)
// or in rounds of the function's own (InputRequired, read back with
// InputResponses and RequestState: rounds.go), MCP catalogs (Cataloger),
// and whether its calls may, must or must not be tasks (tasks.go:
// WithTaskSupport; during a task a request to the client makes it
// input_required, and a ProtocolError ends it failed).
package pluginsdk

import (
	"context"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Tool is the interface of client/server protocol 1.0.0, section 5
// ("OpenToolServer 与 Tool 的交互方式").
//
// Both methods may be called concurrently from many goroutines; the host
// does not serialise calls.
type Tool interface {
	// Load returns the tool's OpenTool document. The host calls it once
	// after the handshake and validates the result; a nil document or an
	// error marks the plugin broken.
	Load(ctx context.Context) (*opentool.OpenTool, error)

	// Call runs function name with args (nil when the call had no params)
	// and returns the result object. Return an *Error to choose the error
	// code the caller sees (400 invalid arguments, 500 tool failure, or
	// your own); any other error is reported with code 500. ctx is
	// cancelled when the caller's deadline passes or it goes away.
	Call(ctx context.Context, name string, args map[string]any) (map[string]any, error)
}

// JSONCaller may be implemented by a Tool that wants its arguments and
// results as raw JSON, skipping the conversion to and from map[string]any.
// When a Tool implements it, CallJSON is used instead of Call.
type JSONCaller interface {
	// CallJSON runs function name. args is the JSON object of arguments
	// (nil or empty when the call had none); the returned bytes must be a
	// JSON object. Errors are as for Tool.Call.
	CallJSON(ctx context.Context, name string, args []byte) ([]byte, error)
}

// Streamer may be implemented by a Tool with streaming functions (those
// whose document entry has "stream"). The host calls StreamCall for
// /opentool/streamCall.
type Streamer interface {
	// StreamCall runs streaming function name and calls send once per
	// produced item, in order. It returns when the stream is complete; a
	// returned error ends the stream with that error (an *Error keeps its
	// code). send returns an error when the caller has gone away; stop then.
	StreamCall(ctx context.Context, name string, args map[string]any, send func(item map[string]any) error) error
}

// DocumentWatcher may be implemented by a Tool whose document changes
// while it runs (an adapter whose upstream tool list changes, a tool that
// reads its functions from a file). The host watches it over the Tool
// service's Watch stream and, on each change, calls Load again and serves
// the new document without restarting the plugin.
type DocumentWatcher interface {
	// DocumentChanged returns a channel that receives a value each time
	// the document Load returns has changed. It is called once, after the
	// handshake; the SDK reads the channel from one goroutine, so a
	// buffered channel of one whose sends do not block (select with
	// default) coalesces bursts.
	DocumentChanged() <-chan struct{}
}
