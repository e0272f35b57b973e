package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/overlay"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// toolOf returns the MCP tool definition (MCP "Tools", Tool) of served
// function fi, whose $refs the host has already inlined: inputSchema is
// the function's input schema as its plugin declares it
// (opentool.InputJSONSchema: Function.InputSchema, else the parameters
// with their extra keywords, as export and argcheck build it),
// outputSchema is outputSchema's; title, annotations, icons and _meta are
// the function's. Errors: the parameters do not convert; the function is
// then not listed. tools/list shows an MCP server's tool as the server
// defines it instead (verbatim, toolList); this definition is what the
// SDK routes calls by.
func toolOf(fi host.FunctionInfo) (*mcp.Tool, error) {
	f := fi.Function
	in := json.RawMessage(f.InputSchema)
	if len(in) == 0 {
		js, err := opentool.ParametersJSONSchema(nil, f)
		if err != nil {
			return nil, fmt.Errorf("function %q: %w", f.Name, err)
		}
		in = raw(js)
	}
	t := &mcp.Tool{Name: f.Name, Description: f.Description, InputSchema: in, Title: f.Title}
	if out := outputSchema(f); out != nil {
		t.OutputSchema = out
	}
	if a := f.Annotations; a != nil {
		t.Annotations = &mcp.ToolAnnotations{Title: a.Title, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint,
			ReadOnlyHint: a.ReadOnlyHint != nil && *a.ReadOnlyHint, IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint}
	}
	for _, ic := range f.Icons {
		t.Icons = append(t.Icons, mcp.Icon{Source: ic.Src, MIMEType: ic.MIMEType, Sizes: ic.Sizes, Theme: mcp.IconTheme(ic.Theme)})
	}
	if len(f.Meta) > 0 {
		if err := json.Unmarshal(f.Meta, &t.Meta); err != nil {
			return nil, fmt.Errorf("function %q: _meta: %w", f.Name, err)
		}
	}
	return t, nil
}

// verbatim returns the MCP definition of f as its MCP server listed it
// (Function.MCPTool), with "name" set to f's served name (a policy
// prefix, --prefix-collisions); execution.taskSupport stays as the server
// wrote it when the host serves tasks (withTasks: Config.Tasks, both
// dialects; package tasklayer) and is left out without them (the host then
// calls a "required" tool as a task itself and serves it as a plain
// tool: mcpadapter, tasks.go); every other member as the server wrote it.
// nil without one. Errors: MCPTool or its execution is not a JSON object
// (the function is then served with the definition toolOf builds).
func verbatim(f *opentool.Function, withTasks bool) (json.RawMessage, error) {
	if len(f.MCPTool) == 0 {
		return nil, nil
	}
	var def map[string]json.RawMessage
	if err := json.Unmarshal(f.MCPTool, &def); err != nil || def == nil {
		return nil, fmt.Errorf("function %q: mcpTool is not a JSON object", f.Name)
	}
	def["name"], _ = json.Marshal(f.Name) // a string encodes
	if ex, ok := def["execution"]; ok {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(ex, &m); err != nil || m == nil {
			return nil, fmt.Errorf("function %q: mcpTool.execution is not a JSON object", f.Name)
		}
		if _, ok := m["taskSupport"]; ok && !withTasks {
			delete(m, "taskSupport")
			def["execution"], _ = json.Marshal(m) // decoded JSON: encodes
			if len(m) == 0 {
				delete(def, "execution")
			}
		}
	}
	return json.Marshal(def) // decoded JSON: encodes
}

// raw is schema encoded once, so that tools/list does not encode the
// maps again on every request.
func raw(schema map[string]any) json.RawMessage {
	// Schemas hold only what json.Unmarshal makes (JSONSchema), so
	// encoding cannot fail.
	b, _ := json.Marshal(schema)
	return b
}

// outputSchema is the MCP outputSchema of f, which must be of type
// object: f's OutputSchema as declared when it has one; else f's return
// schema when it is an object schema (OpenTool documents such as the
// reference mock's often describe only the value, e.g. an integer, not
// the result object; those get none); for a streaming function
// {"type":"object","properties":{"items":{"type":"array","items":ITEM}},
// "required":["items"]}, ITEM being the item schema when that is an
// object schema and left out otherwise; nil in every other case.
func outputSchema(f *opentool.Function) json.RawMessage {
	if len(f.OutputSchema) > 0 {
		return json.RawMessage(f.OutputSchema)
	}
	if f.IsStream() {
		items := map[string]any{"type": opentool.TypeArray}
		if f.Stream.Data != nil && isObject(f.Stream.Data.Schema) {
			items["items"] = f.Stream.Data.Schema.JSONSchema()
		}
		return raw(map[string]any{"type": opentool.TypeObject, "properties": map[string]any{"items": items}, "required": []any{"items"}})
	}
	if f.Return == nil || !isObject(f.Return.Schema) {
		return nil
	}
	return raw(f.Return.Schema.JSONSchema())
}

// isObject reports whether s is an object schema.
func isObject(s *opentool.Schema) bool { return s != nil && s.Type == opentool.TypeObject }

// fingerprint is the JSON of t and of its verbatim definition def (nil:
// none), to tell a changed definition from an unchanged one (maps
// marshal with sorted keys, so equal definitions give equal strings).
func fingerprint(t *mcp.Tool, def json.RawMessage) string {
	b, _ := json.Marshal(t) // as raw: cannot fail
	return string(b) + "\x00" + string(def)
}

// toolList is a tools/list result whose tools are written as raw JSON:
// an MCP server's tool as the server defines it (verbatim), any other as
// the SDK writes the definition toolOf built. Every other member
// (nextCursor, _meta, ttlMs, cacheScope, resultType) is the SDK's
// result's, written as the SDK writes it; its methods (mcp.Result) are
// the SDK result's too.
type toolList struct {
	*mcp.ListToolsResult
	// Tools takes the place of ListToolsResult.Tools in the JSON.
	Tools []json.RawMessage `json:"tools"`
}

// toolList returns lr, a page of tools/list already filtered for the
// caller, as it is when none of its tools is an MCP server's, else as a
// toolList: the definitions those servers list to the client of ctx
// (clientDefs).
func (s *Server) toolList(ctx context.Context, x *core.Exchange, lr *mcp.ListToolsResult) mcp.Result {
	defs := s.withExecution(lr, s.clientDefs(ctx, x, lr))
	if !slices.ContainsFunc(lr.Tools, func(t *mcp.Tool) bool { return defs[t.Name] != nil }) {
		return lr
	}
	out := &toolList{ListToolsResult: lr, Tools: make([]json.RawMessage, len(lr.Tools))}
	for i, t := range lr.Tools {
		if out.Tools[i] = defs[t.Name]; out.Tools[i] == nil {
			out.Tools[i], _ = json.Marshal(t) // the SDK accepted it: encodes
		}
	}
	return out
}

// withExecution returns defs, the verbatim definitions of page lr, with
// a definition listing execution.taskSupport added for each tool of lr
// whose function declares it (tasklayer.TaskSupport), when the host
// serves tasks.
func (s *Server) withExecution(lr *mcp.ListToolsResult, defs map[string]json.RawMessage) map[string]json.RawMessage {
	if s.cfg.Tasks == nil {
		return defs
	}
	var out map[string]json.RawMessage
	for _, t := range lr.Tools {
		ts := s.taskSupport(t.Name)
		if ts == "" || defs[t.Name] != nil {
			continue
		}
		def, err := toolWithExecution(t, ts)
		if err != nil {
			continue // listed without it
		}
		if out == nil {
			out = make(map[string]json.RawMessage, len(defs)+1)
			for k, v := range defs {
				out[k] = v
			}
		}
		out[t.Name] = def
	}
	if out == nil {
		return defs
	}
	return out
}

// toolWithExecution is t as the SDK writes it with "execution":
// {"taskSupport": ts}.
func toolWithExecution(t *mcp.Tool, ts string) (json.RawMessage, error) {
	ex, _ := json.Marshal(opentool.Execution{TaskSupport: ts}) // a struct of a string: encodes
	return overlay.Members{"execution": ex}.Write(t)
}

// taskSupport is what the function of tool name as served declares of
// tasks (tasklayer.TaskSupport); "" for a tool not served.
func (s *Server) taskSupport(name string) string {
	fi, ok := s.Function(name)
	if !ok {
		return ""
	}
	return tasklayer.TaskSupport(fi)
}
