// Package overlay writes a plugin's catalog results to the MCP client as
// the plugin wrote them (an MCP server behind the host: as the server
// wrote them, mcpadapter),
// not as the SDK's types would write them again, which drop the members
// they do not hold and the zero values they omit:
//
//	result                     how
//	resources/list,            the front end's lists: the items as the
//	resources/templates/list,  host holds them (host.CatalogItem), in the SDK's page
//	prompts/list               (its order, nextCursor, filtered per key)
//	resources/read,            Call: the plugin's result once the
//	prompts/get,               SDK's type has decoded it (Note: its shape
//	completion/complete        checked)
//
// Either is Members written on the SDK's result: its members replace the
// SDK's, _meta member by member, but for the protocol's members the
// host writes as the server its clients talk to (hostMembers: the SDK
// decoded the plugin's and fills in their defaults, e.g. cacheScope
// "public" for a Go SDK plugin's ""), and what the SDK adds after the
// middleware (resultType, _meta's server info for 2026-07-28 clients)
// stays, the SDK's result's methods being the wrapper's.
package overlay

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostMembers are the result members the SDK's result keeps: the cache
// hints of the lists and resources/read (MCP 2026-07-28, SEP-2549) and
// resultType (SEP-2322).
var hostMembers = []string{"ttlMs", "cacheScope", "resultType"}

// Members are members (JSON values by name) written over an SDK result.
type Members map[string]json.RawMessage

// Write is sdk's JSON (any SDK result) with o's members in place of its
// own; _meta is merged member by member (o's win) when both are objects.
// Errors: sdk does not encode as a JSON object.
func (o Members) Write(sdk any) ([]byte, error) {
	b, err := json.Marshal(sdk)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range o {
		if k == "_meta" {
			v = mergeMeta(m[k], v)
		}
		m[k] = v
	}
	return json.Marshal(m)
}

// mergeMeta is the object sdk with over's members written over it;
// over when either is not an object.
func mergeMeta(sdk, over json.RawMessage) json.RawMessage {
	var a, b map[string]json.RawMessage
	if len(sdk) == 0 || json.Unmarshal(sdk, &a) != nil || a == nil || json.Unmarshal(over, &b) != nil || b == nil {
		return over
	}
	maps.Copy(a, b)
	out, _ := json.Marshal(a) // decoded JSON: encodes
	return out
}

// The SDK results with an Members, one type per result since the SDK
// sets resultType through an unexported method that only embedding the
// SDK's own type carries.
type (
	verbatimRead struct {
		*mcp.ReadResourceResult
		o Members
	}
	verbatimPrompt struct {
		*mcp.GetPromptResult
		o Members
	}
	verbatimResources struct {
		*mcp.ListResourcesResult
		o Members
	}
	verbatimTemplates struct {
		*mcp.ListResourceTemplatesResult
		o Members
	}
	verbatimPrompts struct {
		*mcp.ListPromptsResult
		o Members
	}
	verbatimComplete struct {
		*mcp.CompleteResult
		o Members
	}
)

// MarshalJSON implements json.Marshaler.
func (v verbatimRead) MarshalJSON() ([]byte, error) { return v.o.Write(v.ReadResourceResult) }

// MarshalJSON implements json.Marshaler.
func (v verbatimPrompt) MarshalJSON() ([]byte, error) { return v.o.Write(v.GetPromptResult) }

// MarshalJSON implements json.Marshaler.
func (v verbatimResources) MarshalJSON() ([]byte, error) { return v.o.Write(v.ListResourcesResult) }

// MarshalJSON implements json.Marshaler.
func (v verbatimTemplates) MarshalJSON() ([]byte, error) {
	return v.o.Write(v.ListResourceTemplatesResult)
}

// MarshalJSON implements json.Marshaler.
func (v verbatimPrompts) MarshalJSON() ([]byte, error) { return v.o.Write(v.ListPromptsResult) }

// MarshalJSON implements json.Marshaler.
func (v verbatimComplete) MarshalJSON() ([]byte, error) { return v.o.Write(v.CompleteResult) }

// With returns res written with o over it; res itself when it is
// not one of the catalog's results.
func With(res mcp.Result, o Members) mcp.Result {
	switch r := res.(type) {
	case *mcp.ReadResourceResult:
		return verbatimRead{r, o}
	case *mcp.GetPromptResult:
		return verbatimPrompt{r, o}
	case *mcp.ListResourcesResult:
		return verbatimResources{r, o}
	case *mcp.ListResourceTemplatesResult:
		return verbatimTemplates{r, o}
	case *mcp.ListPromptsResult:
		return verbatimPrompts{r, o}
	case *mcp.CompleteResult:
		return verbatimComplete{r, o}
	}
	return res
}

// verbatimKey is the context key of the *json.RawMessage where Note
// leaves a plugin's result as it wrote it (Call).
type verbatimKey struct{}

// Call runs next, the SDK server's handler of a resources/read,
// prompts/get or completion/complete, and returns its result with the
// members of the plugin's own (Note leaves it on the context once the
// SDK's type has decoded it) written over it, but for hostMembers.
func Call(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	var raw json.RawMessage
	res, err := next(context.WithValue(ctx, verbatimKey{}, &raw), method, req)
	var o Members
	if err != nil || len(raw) == 0 || json.Unmarshal(raw, &o) != nil {
		return res, err
	}
	for _, k := range hostMembers {
		delete(o, k)
	}
	return With(res, o), nil
}

// Note leaves res, a plugin's result (a JSON object) that decoded, where
// Call finds it, when ctx came through it.
func Note(ctx context.Context, res json.RawMessage) {
	if into, ok := ctx.Value(verbatimKey{}).(*json.RawMessage); ok {
		*into = res
	}
}
