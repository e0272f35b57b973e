package host

// Tool search (Config.ToolSearch, --tool-search): two functions of the
// host's own, served beside the plugins' on every front end (Functions,
// Document, Function; the OpenTool API, Open Tool Calling, MCP) and
// called through the one call path, so that a client whose context
// window cannot hold every definition finds what it needs and calls it:
//
//	search_tools {"query", "limit"}  → {"tools": [{"name", "description",
//	                                   "inputSchema"}, ...]}: BM25 over the
//	                                   plugins' functions (package
//	                                   toolsearch), most relevant first, only
//	                                   those the caller's key may call
//	                                   (access.Allowed) and its own view
//	                                   shows (CallView: shownBy); a hit its
//	                                   view defines otherwise (an MCP
//	                                   server's tool listed to that client
//	                                   with its own description or
//	                                   inputSchema: Shown.Definition) gives
//	                                   those, as the server wrote them, else
//	                                   the shared ones; ranked on the shared
//	                                   ones either way
//	call_tool {"name", "arguments"}  → the named function's own result: the
//	                                   call is that function's call (invoke:
//	                                   its route, its key check, so that a
//	                                   function the key may not call is not
//	                                   found exactly as when called by name,
//	                                   its validation, its one record for
//	                                   Config.OnCall); a streaming
//	                                   function's items are collected into
//	                                   {"items": [...]}, at most
//	                                   Config.MaxResultBytes
//
// Every key may call both (they reach only what the key may call);
// FunctionInfo.Builtin marks them, so that listings (package catalog)
// show them to every key and apply Config.ToolSearchThreshold. A
// plugin's function of the same name is refused as a conflict owned by
// BuiltinOwner (or, with Config.PrefixCollisions, served prefixed).
// Neither takes a rate-limit token of its own: a front end takes one per
// request, and call_tool is one request.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/host/toolsearch"
	"github.com/opentool-host/opentool-host/internal/version"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// BuiltinOwner is the owner a Conflict names when a plugin declares the
// name of one of the host's own functions (tool search's).
const BuiltinOwner = "opentool-host"

// indexRetire is how long a replaced search index stays open for the
// searches that still hold it.
const indexRetire = time.Minute

// builtins are the host's own functions (tool search's); nil when
// Config.ToolSearch is off.
type builtins struct {
	fns  []*opentool.Function // search_tools, call_tool (ToolSearch); run_code (CodeMode)
	args map[string]*argcheck.Validator
	info opentool.Info // the info FunctionInfo gives them
	// owner is the claim every rebuild gives their names (routes.go), so
	// that no plugin takes them.
	owner *supervise.Plugin

	mu    sync.Mutex // one index build at a time
	index atomic.Pointer[searchIndex]

	// code runs run_code's programs (codemode.go); nil until Start
	// (startCode) and without Config.CodeMode.
	code atomic.Pointer[codeMode]
}

// searchIndex is the search index of one set of served functions.
type searchIndex struct {
	fns []*opentool.Function // identity of the set (route tables share the plugins' functions)
	x   *toolsearch.Index
}

// newBuiltins returns the host's own functions for cfg, nil without
// Config.ToolSearch and Config.CodeMode. The definitions are
// toolsearch.MetaTools and runCodeTool; each is projected to OpenTool
// parameters and compiled like a plugin's.
func newBuiltins(cfg *core.Config) (*builtins, error) {
	if !cfg.ToolSearch && !cfg.CodeMode {
		return nil, nil
	}
	b := &builtins{args: map[string]*argcheck.Validator{}, owner: supervise.NewPlugin(&supervise.Supervisor{Cfg: cfg}, BuiltinOwner, ""),
		info: opentool.Info{Title: BuiltinOwner, Version: version.Version, Description: "The host's own functions: search the functions of its plugins, call one, run a program that calls them."}}
	var defs []toolsearch.Tool
	if cfg.ToolSearch {
		defs = toolsearch.MetaTools()
	}
	if cfg.CodeMode {
		if cfg.CodeRunner == "" {
			return nil, errors.New("host: CodeMode (--code-mode) needs the code runner's binary (Config.CodeRunner: opentool-host-coderunner beside the host)")
		}
		defs = append(defs, runCodeTool(cfg.ToolSearch))
	}
	for _, t := range defs {
		if err := b.add(t); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// add serves t as one of the host's own functions. Errors: its schemas
// do not project or compile.
func (b *builtins) add(t toolsearch.Tool) error {
	f := &opentool.Function{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, OutputSchema: t.OutputSchema}
	in, err := opentool.DecodeJSONSchema(t.InputSchema)
	if err == nil {
		f.Parameters, f.AdditionalParameters, _, err = opentool.ProjectParameters(in)
	}
	if err == nil && len(t.OutputSchema) > 0 {
		var out map[string]any
		if out, err = opentool.DecodeJSONSchema(t.OutputSchema); err == nil {
			var s *opentool.Schema
			s, err = opentool.FromJSONSchema(out)
			f.Return = &opentool.Return{Name: "result", Schema: s}
		}
	}
	if err != nil {
		return fmt.Errorf("host: the host's function %s: %w", t.Name, err)
	}
	if t.Name == RunCodeName { // a long program: a task where its caller asks
		f.Execution = &opentool.Execution{TaskSupport: opentool.TaskSupportOptional}
	}
	if t.Name == toolsearch.SearchToolName {
		readOnly := true
		f.Annotations = &opentool.Annotations{ReadOnlyHint: &readOnly}
	}
	v, err := argcheck.Compile(f)
	if err != nil {
		return fmt.Errorf("host: the host's function %s: %w", t.Name, err)
	}
	b.fns = append(b.fns, f)
	b.args[f.Name] = v
	return nil
}

// function returns the host's own function named fn, or nil.
func (b *builtins) function(fn string) *opentool.Function {
	if b == nil {
		return nil
	}
	for _, f := range b.fns {
		if f.Name == fn {
			return f
		}
	}
	return nil
}

// claim gives the names of the host's own functions to b.owner in claims,
// before the plugins claim theirs (buildRoutes).
func (b *builtins) claim(claims map[string]claim) {
	if b == nil {
		return
	}
	for _, f := range b.fns {
		claims[f.Name] = claim{owner: b.owner, fn: f.Name}
	}
}

// route prepares r when it names one of the host's own functions: it
// returns search_tools' runner for search_tools; for call_tool it makes
// r the named function's call (r.fn, r.args, r.collect) and returns nil,
// so that the call path goes on with it. nil, nil for every other name.
// Errors (the call ends with them): a streaming call of either, or
// call_tool's arguments do not fit its parameters or name one of the
// host's own functions.
func (b *builtins) route(r *request) (func(ctx context.Context, h *Host, r *request) error, error) {
	f := b.function(r.fn)
	if f == nil {
		return nil, nil
	}
	if r.stream {
		return nil, r.Fail(core.KindWrongKind, "", fmt.Sprintf("wrong call kind: function %q does not stream; use call", r.fn), nil)
	}
	if err := b.args[f.Name].Validate(r.args); err != nil {
		return nil, invalidParams(r, "", err)
	}
	switch f.Name {
	case toolsearch.SearchToolName:
		return b.search, nil
	case RunCodeName:
		return b.runCode, nil
	}
	var in struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(r.args, &in); err != nil { // validated: cannot happen
		return nil, invalidParams(r, "", err)
	}
	if b.function(in.Name) != nil {
		return nil, r.Fail(core.KindInvalidParams, "", fmt.Sprintf("invalid params: %s calls the functions %s finds, not %s", toolsearch.CallToolName, toolsearch.SearchToolName, in.Name), nil)
	}
	r.fn, r.args, r.collect = in.Name, in.Arguments, true
	if string(r.args) == "null" {
		r.args = nil
	}
	return nil, nil
}

// search runs search_tools r (its arguments validated): the hits its
// caller may call and its view shows, as {"tools": [...]}, each as its
// caller was shown it (foundAs). The ranking is over the shared
// descriptions and input schemas (the one index of the served
// functions), whichever a caller was shown.
func (b *builtins) search(ctx context.Context, h *Host, r *request) error {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(r.args, &in); err != nil { // validated: cannot happen
		return invalidParams(r, "", err)
	}
	t := h.routes.Load()
	ix, err := b.indexOf(t)
	if err != nil {
		return r.Fail(core.KindTransport, "", "the tool search index could not be built", err)
	}
	view := callView(ctx)
	var own map[string]json.RawMessage // a hit's name → its caller's own definition (Shown.Definition)
	hits, err := ix.x.Search(in.Query, in.Limit, func(name string) bool {
		rt := t.funcs[name]
		if rt == nil || !access.Allowed(ctx, rt.plugin.Name(), name) {
			return false
		}
		shown, ok := shownBy(ctx, view, rt)
		if ok && shown.Definition != nil {
			if own == nil {
				own = map[string]json.RawMessage{}
			}
			own[name] = shown.Definition
		}
		return ok
	})
	switch {
	case errors.Is(err, toolsearch.ErrEmptyQuery):
		return r.Fail(core.KindInvalidParams, "", "invalid params: query: the query has no words", err)
	case err != nil && len(strings.TrimSpace(in.Query)) > toolsearch.MaxQueryBytes:
		return r.Fail(core.KindInvalidParams, "", fmt.Sprintf("invalid params: query: longer than %d bytes", toolsearch.MaxQueryBytes), err)
	case err != nil: // the index was closed under it (Host.Close)
		return r.Fail(core.KindTransport, "", "the tool search failed", err)
	}
	out := struct {
		Tools []found `json:"tools"`
	}{Tools: make([]found, 0, len(hits))}
	for _, hit := range hits {
		out.Tools = append(out.Tools, foundAs(hit.Tool, own[hit.Tool.Name]))
	}
	res, err := json.Marshal(out)
	if err != nil { // schemas are JSON the host decoded: cannot happen
		return r.Fail(core.KindResultRejected, "", "the search result does not encode", err)
	}
	return r.Emit(res)
}

// found is one of search_tools' hits: a function's served name, its
// description (a JSON string) and its inputSchema (a JSON object; null
// when the function's parameters do not convert).
type found struct {
	Name        string          `json:"name"`
	Description json.RawMessage `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// foundAs is search_tools' hit of tool (the function as indexed, with
// its shared description and input schema) as its caller was shown it:
// with def, the caller's own definition of it (Shown.Definition: the
// MCP tool its server listed to that caller), def's description and
// inputSchema as the server wrote them (a description def lacks, or that
// is not a JSON string: ""; an inputSchema def lacks, or that is not a
// JSON object: the shared one, which then checks the calls); without,
// the shared ones.
func foundAs(tool toolsearch.Tool, def json.RawMessage) found {
	desc, _ := json.Marshal(tool.Description) // a string: cannot fail
	f := found{Name: tool.Name, Description: desc, InputSchema: tool.InputSchema}
	if def == nil {
		return f
	}
	var t struct {
		Description json.RawMessage `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if json.Unmarshal(def, &t) != nil { // not a JSON object: as served
		return f
	}
	f.Description = json.RawMessage(`""`)
	if len(t.Description) > 0 && t.Description[0] == '"' {
		f.Description = t.Description
	}
	if len(t.InputSchema) > 0 && t.InputSchema[0] == '{' {
		f.InputSchema = t.InputSchema
	}
	return f
}

// indexOf returns the search index of t's functions, building it when
// they changed since the last (the one it replaces is closed after
// indexRetire). A function whose input schema does not convert is
// indexed without it.
func (b *builtins) indexOf(t *routeTable) (*searchIndex, error) {
	if ix := b.index.Load(); ix != nil && ix.serves(t) {
		return ix, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ix := b.index.Load(); ix != nil && ix.serves(t) {
		return ix, nil
	}
	ix := &searchIndex{fns: make([]*opentool.Function, len(t.order))}
	tools := make([]toolsearch.Tool, len(t.order))
	for i, rt := range t.order {
		ix.fns[i] = rt.fn
		tools[i] = toolsearch.Tool{Name: rt.fn.Name, Plugin: rt.plugin.Name(), Description: rt.fn.Description, InputSchema: inputSchema(rt.fn)}
	}
	x, err := toolsearch.New(tools)
	if err != nil {
		return nil, err
	}
	ix.x = x
	if old := b.index.Swap(ix); old != nil {
		time.AfterFunc(indexRetire, func() { _ = old.x.Close() })
	}
	return ix, nil
}

// close closes the search index (Host.Close).
func (b *builtins) close() {
	if b == nil {
		return
	}
	if ix := b.index.Swap(nil); ix != nil {
		_ = ix.x.Close()
	}
	if c := b.code.Swap(nil); c != nil {
		c.pool.Close()
	}
}

// serves reports whether ix indexes the functions of t.
func (ix *searchIndex) serves(t *routeTable) bool {
	if len(ix.fns) != len(t.order) {
		return false
	}
	for i, rt := range t.order {
		if ix.fns[i] != rt.fn {
			return false
		}
	}
	return true
}

// inputSchema is f's JSON Schema of its arguments (as the front ends
// serve it: opentool.InputJSONSchema), nil when it does not convert.
func inputSchema(f *opentool.Function) json.RawMessage {
	if len(f.InputSchema) > 0 {
		return f.InputSchema
	}
	js, err := opentool.InputJSONSchema(nil, f)
	if err != nil {
		return nil
	}
	b, err := json.Marshal(js)
	if err != nil {
		return nil
	}
	return b
}
