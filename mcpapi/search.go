package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/access"
	"github.com/opentool-host/opentool-host/toolsearch"
)

// Tool search (--tool-search, Config.ToolSearch): two meta-tools beside
// the catalog, so that a client whose context window cannot hold every
// definition finds what it needs and calls it.
//
//	search_tools {"query", "limit"}  → structuredContent {"tools": [{"name",
//	                                   "description", "inputSchema"}, ...]},
//	                                   BM25 over names, descriptions and
//	                                   parameter names (package toolsearch),
//	                                   only tools the key may call
//	call_tool {"name", "arguments"}  → the named tool's own result, through
//	                                   the same call path as tools/call
//
// With Config.ToolSearchThreshold N > 0, tools/list gives a key whose
// catalog holds more than N tools the two meta-tools alone (filterTools).
// A plugin's function named like a meta-tool is not served over MCP while
// tool search is on (logged).

// indexRetire is how long a replaced search index stays open for the
// searches that still hold it.
const indexRetire = time.Minute

// addMetaTools serves the two meta-tools.
func (s *Server) addMetaTools() {
	for _, t := range toolsearch.MetaTools() {
		def := &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: t.Name == toolsearch.SearchToolName}}
		if t.Name == toolsearch.SearchToolName {
			s.srv.AddTool(def, s.searchTools)
		} else {
			s.srv.AddTool(def, s.callTool)
		}
	}
}

// isMeta reports whether name is a meta-tool while tool search is on.
func (s *Server) isMeta(name string) bool {
	return s.cfg.ToolSearch && (name == toolsearch.SearchToolName || name == toolsearch.CallToolName)
}

// reindex rebuilds the search index over tools (name → definition) and
// their plugins; the one it replaces is closed after indexRetire. Callers
// hold s.mu.
func (s *Server) reindex(tools []toolsearch.Tool) {
	x, err := toolsearch.New(tools)
	if err != nil {
		s.cfg.Logger.Error("tool search index not rebuilt; the previous one serves", "error", err)
		return
	}
	if old := s.search.Swap(x); old != nil {
		time.AfterFunc(indexRetire, func() { _ = old.Close() })
	}
}

// searchTools is the search_tools handler.
func (s *Server) searchTools(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Query == "" {
		return toolError(`invalid arguments: want {"query": "what you want to do", "limit": N}`), nil
	}
	if in.Limit <= 0 {
		in.Limit = 5
	}
	x := s.search.Load()
	if x == nil {
		return toolError("the tool index is not built yet; try again shortly"), nil
	}
	g := access.GrantFrom(ctx)
	plugins := *s.plugins.Load()
	hits, err := x.Search(in.Query, in.Limit, func(name string) bool {
		p, ok := plugins[name]
		return ok && g.Allows(p, name)
	})
	if err != nil {
		return toolError(err.Error()), nil
	}
	type found struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	}
	out := struct {
		Tools []found `json:"tools"`
	}{Tools: []found{}}
	for _, h := range hits {
		out.Tools = append(out.Tools, found{h.Tool.Name, h.Tool.Description, h.Tool.InputSchema})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// callTool is the call_tool handler: the named tool's tools/call, with
// the same request (progress token, session) and the given arguments.
// What the key may not call is not found, as on tools/call.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &in); err != nil || in.Name == "" {
		return toolError(`invalid arguments: want {"name": "a tool's name", "arguments": {...}}`), nil
	}
	if s.isMeta(in.Name) {
		return toolError(fmt.Sprintf("%s calls the tools search_tools finds, not %s", toolsearch.CallToolName, in.Name)), nil
	}
	if len(in.Arguments) == 0 || string(in.Arguments) == "null" {
		in.Arguments = json.RawMessage(`{}`)
	}
	inner := *req
	params := *req.Params
	params.Name, params.Arguments = in.Name, in.Arguments
	inner.Params = &params
	return s.handler(in.Name)(ctx, &inner)
}

// toolError is an isError result with msg.
func toolError(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
