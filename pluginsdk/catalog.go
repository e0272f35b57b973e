package pluginsdk

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/opentool-host/opentool-host/internal/wire"
	"github.com/opentool-host/opentool-host/internal/wire/toolpb"
)

// Catalog is what a plugin serves MCP clients beyond its functions
// (plugin protocol 3; MCP 2025-11-25 "Server Features": Resources,
// Prompts, Completion). The host serves every plugin's catalog on /mcp
// beside the tools: names and URIs as the plugin gives them (a prompt
// name another plugin owns is refused, or with --prefix-collisions served
// as "PLUGIN__NAME"; a URI or URI template another plugin owns is
// refused), to the API keys that may see the whole plugin ("*" or
// "plugin:NAME").
type Catalog struct {
	// Resources are the plugin's resources (resources/list).
	Resources []*mcp.Resource `json:"resources,omitempty"`
	// ResourceTemplates are its resource templates
	// (resources/templates/list).
	ResourceTemplates []*mcp.ResourceTemplate `json:"resourceTemplates,omitempty"`
	// Prompts are its prompts (prompts/list).
	Prompts []*mcp.Prompt `json:"prompts,omitempty"`
	// Completions says it answers completion/complete for its prompts'
	// arguments and its templates' variables.
	Completions bool `json:"completions,omitempty"`
	// Subscribe says it takes resources/subscribe and reports changes
	// of subscribed resources (CatalogChange.URI).
	Subscribe bool `json:"subscribe,omitempty"`
	// SharedTools says the plugin lists the same tools to every MCP
	// client: its HandleMCP answers tools/list with -32601 whatever the
	// client (the MCP server adapter of a server declared "sessions":
	// "shared"), so the host need not ask it for a client's own list.
	// False (the default) promises nothing: the host asks.
	SharedTools bool `json:"sharedTools,omitempty"`
	// Raw, when not nil, is sent to the host in place of Resources,
	// ResourceTemplates and Prompts: the items as JSON objects written
	// by someone else (the MCP server adapter relays its server's lists
	// so, members no SDK type holds included). The host refuses a
	// catalog with an item that is not an object with its key (uri,
	// uriTemplate, name).
	Raw *RawCatalog `json:"-"`
}

// RawCatalog is a Catalog's lists as JSON objects (Catalog.Raw), each
// in its server's order.
type RawCatalog struct {
	Resources         []json.RawMessage `json:"resources,omitempty"`
	ResourceTemplates []json.RawMessage `json:"resourceTemplates,omitempty"`
	Prompts           []json.RawMessage `json:"prompts,omitempty"`
}

// wire is what c sends the host (tool.proto CatalogResponse.catalog):
// c itself, or with Raw its raw lists in place of the typed ones.
func (c *Catalog) wire() any {
	if c.Raw == nil {
		return c
	}
	return struct {
		*RawCatalog
		Completions bool `json:"completions,omitempty"`
		Subscribe   bool `json:"subscribe,omitempty"`
		SharedTools bool `json:"sharedTools,omitempty"`
	}{c.Raw, c.Completions, c.Subscribe, c.SharedTools}
}

// Cataloger may be implemented by a Tool that serves MCP resources,
// resource templates and prompts (the MCP server adapter does). The host
// calls Catalog after Load and after each catalog change, and HandleMCP
// for the requests of MCP clients on what the catalog lists.
type Cataloger interface {
	// Catalog returns the plugin's catalog.
	Catalog(ctx context.Context) (*Catalog, error)
	// HandleMCP answers MCP request method with params (a JSON object):
	// resources/read, resources/subscribe, resources/unsubscribe,
	// prompts/get or completion/complete, as MCP 2025-11-25 defines them.
	// The result is encoded to JSON. Errors: an *RPCError reaches the
	// client as it is (e.g. code -32002, resource not found); any other
	// error as -32603 with its text.
	HandleMCP(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// CatalogWatcher may be implemented by a Cataloger whose catalog or
// resources change while it runs. The host follows it over the Watch
// stream.
type CatalogWatcher interface {
	// CatalogChanged returns a channel that receives a CatalogChange
	// each time the catalog changed (URI empty: the host calls Catalog
	// again and sends its clients list_changed) or a resource's content
	// changed (URI set: the host sends notifications/resources/updated
	// to the clients subscribed to it). Called once; read from one
	// goroutine.
	CatalogChanged() <-chan CatalogChange
}

// LogWatcher may be implemented by a Tool served in the host's process
// (Local: the MCP server adapter) whose log messages outside any call
// reach the MCP clients that asked for them (logging/setLevel, at their
// level).
type LogWatcher interface {
	// LogMessages returns a channel that receives the params (a JSON
	// object: level, logger, data) of each notifications/message sent
	// outside a call. Called once; read from one goroutine.
	LogMessages() <-chan json.RawMessage
}

// ListWatcher may be implemented by a Tool served in the host's process
// (Local: the MCP server adapter) whose MCP server says when its lists
// change (notifications/tools/list_changed, prompts/list_changed,
// resources/list_changed): the host passes each on to its MCP clients as
// it came, besides the changes it sees in the document and catalog.
type ListWatcher interface {
	// ListsChanged returns a channel that receives the name of each list
	// the server said changed: ListTools, ListPrompts or ListResources.
	// Called once; read from one goroutine.
	ListsChanged() <-chan string
}

// The lists a ListWatcher names.
const (
	ListTools     = wire.ListTools
	ListPrompts   = wire.ListPrompts
	ListResources = wire.ListResources
)

// CatalogChange is one change a CatalogWatcher reports.
type CatalogChange struct {
	// URI is the resource whose content changed; empty when the catalog
	// itself changed.
	URI string
}

// RPCError is a JSON-RPC error object: a Cataloger's errors that reach
// MCP clients as they are, and what ClientRequest fails with when the
// client (or the host) refused.
type RPCError = wire.RPCError

// Catalog implements toolpb.ToolServer: the tool's Cataloger catalog as
// JSON. Errors: codes.Unimplemented when the tool has no catalog or the
// host speaks protocol 2.
func (s *server) Catalog(ctx context.Context, _ *toolpb.CatalogRequest) (resp *toolpb.CatalogResponse, err error) {
	c, ok := s.tool.(Cataloger)
	if !ok || !s.v3 {
		return nil, status.Error(codes.Unimplemented, "the tool serves no MCP catalog")
	}
	defer recoverInto("Catalog", func(e *Error) { resp, err = &toolpb.CatalogResponse{Error: toProto(e)}, nil })
	cat, cerr := c.Catalog(ctx)
	if cerr != nil {
		return &toolpb.CatalogResponse{Error: toProto(AsError(cerr))}, nil
	}
	if cat == nil {
		cat = &Catalog{}
	}
	b, merr := json.Marshal(cat.wire())
	if merr != nil {
		return &toolpb.CatalogResponse{Error: toProto(ToolFailure("encode catalog: %v", merr))}, nil
	}
	return &toolpb.CatalogResponse{Catalog: b}, nil
}

// Request implements toolpb.ToolServer: one MCP request to the tool's
// Cataloger. Errors: codes.Unimplemented when the tool has no catalog.
func (s *server) Request(ctx context.Context, req *toolpb.MCPRequest) (resp *toolpb.MCPResponse, err error) {
	c, ok := s.tool.(Cataloger)
	if !ok || !s.v3 {
		return nil, status.Error(codes.Unimplemented, "the tool serves no MCP catalog")
	}
	defer recoverInto(req.GetMethod(), func(e *Error) {
		resp, err = &toolpb.MCPResponse{Error: &toolpb.RPCError{Code: wire.CodeInternalError, Message: e.Message}}, nil
	})
	res, herr := c.HandleMCP(ctx, req.GetMethod(), req.GetParams())
	if herr != nil {
		var re *RPCError
		if !errors.As(herr, &re) {
			re = &RPCError{Code: wire.CodeInternalError, Message: herr.Error()}
		}
		return &toolpb.MCPResponse{Error: wire.ToProtoRPCError(re)}, nil
	}
	b, merr := json.Marshal(res)
	if merr != nil {
		return &toolpb.MCPResponse{Error: &toolpb.RPCError{Code: wire.CodeInternalError, Message: "encode result: " + merr.Error()}}, nil
	}
	return &toolpb.MCPResponse{Result: b}, nil
}
