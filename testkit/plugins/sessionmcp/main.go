// Command sessionmcp is an MCP server over stdio (the Go SDK) that
// reports what its one client session shows it, for tests of the host's
// per-client upstream sessions: tool "whoami" answers with a JSON text
// {"pid", "client" (clientInfo.name), "extensions" (the names of the
// client's capabilities.extensions), "roots" (the URIs roots/list gives
// now), "level" (the last logging/setLevel, "" for none)}; tool "emit"
// with {"marker": S} sends notifications/message at level "info" with
// data S after its result, outside any call (once its result is written
// and 100 ms have passed); prompt "whoami" answers with one user message
// whose text is the session's clientInfo.name; tool "retool" with
// {"whoami": "drop"} removes tool whoami, with {"whoami": "require_n"}
// lists it again with an inputSchema that requires an integer "n" (the
// SDK then sends notifications/tools/list_changed on the session: this
// process serves one); with the argument --require-n, whoami is listed
// so from the start; tool "hang" sends notifications/message "hanging"
// (level "info") on its call and answers only when the call is
// cancelled; tool "kept_roots" answers {"roots", "asked"}: the URIs of
// the last roots/list it sent outside any call (at notifications/initialized
// and at each notifications/roots/list_changed) and how many such
// answers it got. It exits when its stdin ends.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	mu    sync.Mutex
	level mcp.LoggingLevel
	kept  = []string{} // the roots of the last roots/list outside calls
	asked int          // the answers to those
)

// keepRoots asks ss's client for its roots outside any call (on its own
// goroutine: a notification handler must not wait for the client) and
// keeps them.
func keepRoots(ss *mcp.ServerSession) {
	go func() {
		res, err := ss.ListRoots(context.Background(), nil)
		if err != nil {
			log.Printf("roots/list: %v", err)
			return
		}
		uris := []string{}
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		mu.Lock()
		kept, asked = uris, asked+1
		mu.Unlock()
	}()
}

type emitArgs struct {
	Marker string `json:"marker"`
}

type retoolArgs struct {
	Whoami string `json:"whoami"`
}

// requireN is whoami's inputSchema after retool's require_n, and with
// --require-n.
const requireN = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`

func main() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "sessionmcp", Version: "1.0.0"}, &mcp.ServerOptions{
		Capabilities:            &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{ListChanged: true}, Prompts: &mcp.PromptCapabilities{}},
		InitializedHandler:      func(_ context.Context, req *mcp.InitializedRequest) { keepRoots(req.Session) },
		RootsListChangedHandler: func(_ context.Context, req *mcp.RootsListChangedRequest) { keepRoots(req.Session) },
	})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" {
				mu.Lock()
				level = p.Level
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	schema := `{"type":"object"}`
	if slices.Contains(os.Args[1:], "--require-n") {
		schema = requireN
	}
	srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(schema)}, whoami)
	mcp.AddTool(srv, &mcp.Tool{Name: "emit"}, func(ctx context.Context, req *mcp.CallToolRequest, a emitArgs) (*mcp.CallToolResult, any, error) {
		ss := req.Session
		go func() {
			time.Sleep(100 * time.Millisecond) // after the result: outside the call
			_ = ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: a.Marker})
		}()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "hanging"})
		<-ctx.Done()
		return nil, ctx.Err()
	})
	srv.AddTool(&mcp.Tool{Name: "kept_roots", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		b, _ := json.Marshal(map[string]any{"roots": kept, "asked": asked})
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "retool"}, func(_ context.Context, _ *mcp.CallToolRequest, a retoolArgs) (*mcp.CallToolResult, any, error) {
		switch a.Whoami {
		case "drop":
			srv.RemoveTools("whoami")
		case "require_n":
			srv.AddTool(&mcp.Tool{Name: "whoami", InputSchema: json.RawMessage(requireN)}, whoami)
		default:
			return nil, nil, fmt.Errorf("retool: whoami %q: want drop or require_n", a.Whoami)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "whoami", Description: "The client name this session's client gave."}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		name := ""
		if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			name = ip.ClientInfo.Name
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name}}}}, nil
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}

// whoami reports what the session shows the server.
func whoami(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	out := map[string]any{"pid": os.Getpid(), "extensions": []string{}, "roots": []string{}}
	if ip := req.Session.InitializeParams(); ip != nil {
		if ip.ClientInfo != nil {
			out["client"] = ip.ClientInfo.Name
		}
		if ip.Capabilities != nil {
			var ext []string
			for k := range ip.Capabilities.Extensions {
				ext = append(ext, k)
			}
			slices.Sort(ext)
			if ext != nil {
				out["extensions"] = ext
			}
			if ip.Capabilities.RootsV2 != nil || ip.Capabilities.Roots.ListChanged {
				roots, err := req.Session.ListRoots(ctx, nil)
				if err != nil {
					out["rootsError"] = err.Error()
				} else {
					var uris []string
					for _, r := range roots.Roots {
						uris = append(uris, r.URI)
					}
					out["roots"] = uris
				}
			}
		}
	}
	mu.Lock()
	out["level"] = level
	mu.Unlock()
	b, _ := json.Marshal(out)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}
