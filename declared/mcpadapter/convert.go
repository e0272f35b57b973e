package mcpadapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/host/tasks/mcptasks"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// This file is the MCP → OpenTool conversion of a tool list (the table in
// doc.go). It is pure: no I/O, no session.

// maxNameLen is the longest OpenTool function name
// (^[a-zA-Z0-9_-]{1,64}$, opentool.ValidFunctionName).
const maxNameLen = 64

// converted is an MCP server's tool list as an OpenTool document.
type converted struct {
	// doc is the OpenTool 1.1.0 document; it passes opentool.Validate.
	// Its Refused lists the dropped tools.
	doc *opentool.OpenTool
	// names maps each served function name to its MCP tool name.
	names map[string]string
	// tasked holds the MCP names of the served tools that are called as
	// tasks (execution.taskSupport "required", tasks.go).
	tasked map[string]bool
	// readOnly holds the MCP names of the served tools the server
	// annotates readOnlyHint and does not call as tasks: those the shared
	// session may be lent for (borrow.go).
	readOnly map[string]bool
	// defs is each tool's definition as the server wrote it, by MCP name
	// (serverInfo.defs).
	defs map[string]json.RawMessage
	// dropped lists the tools that are not served and why, in MCP name
	// order.
	dropped []fault
	// partial lists, for tools that are served, what the OpenTool
	// projection of their schemas leaves out (opentool.Loss); the schemas
	// are served and checked as declared all the same.
	partial []fault
}

// fault is one tool's conversion problem.
type fault struct {
	// Tool is the MCP tool name.
	Tool string
	// Reason names the JSON path and what is wrong.
	Reason string
}

// serverInfo is what the document's info is made of, and what the
// server says of tasks.
type serverInfo struct {
	name string              // the declared server name (the plugin's)
	impl *mcp.Implementation // serverInfo of initialize; may be nil
	// taskSupport is each tool's execution.taskSupport, by MCP name
	// (absent: none), read raw from tools/list (the SDK drops it).
	taskSupport map[string]string
	// tasks reports whether the server declares the Tasks extension
	// (capabilities.extensions in initialize).
	tasks bool
	// coreTasks reports whether the server declares the core tasks of
	// 2025-11-25 for tools/call (capabilities.tasks, coretasks.go).
	coreTasks bool
	// defs is each tool's definition as the server wrote it, by MCP name
	// (nil for a name listed twice), read raw from tools/list: each
	// function's MCPTool.
	defs map[string]json.RawMessage
}

// convert turns the tools of one MCP server into an OpenTool 1.1.0
// document. Every tool is served with its schemas as declared
// (inputSchema, outputSchema) and their OpenTool projection (parameters,
// return); a tool whose input schema is not an object schema is left out
// (dropped, with the reason, also in the document's refused list). Names
// are made valid and unique (assignNames). A tool whose
// execution.taskSupport is "required" is called as a task (tasked) when
// the server declares the Tasks extension, and left out otherwise
// (taskRefusal). Each function carries its tool's definition as the
// server wrote it (MCPTool, from info.defs), which /mcp serves.
func convert(info serverInfo, tools []*mcp.Tool) converted {
	c := converted{doc: newDocument(info), names: map[string]string{}, tasked: map[string]bool{}, readOnly: map[string]bool{}, defs: info.defs}
	sorted := slices.Clone(tools)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var ok []*mcp.Tool
	var fns []*opentool.Function
	for _, t := range sorted {
		f, losses, err := function(t)
		if why := taskRefusal(t.Name, info); err == nil && why != "" {
			err = errors.New(why)
		}
		if err != nil {
			c.dropped = append(c.dropped, fault{Tool: t.Name, Reason: err.Error()})
			c.doc.Refused = append(c.doc.Refused, opentool.Refusal{Kind: opentool.RefusedTool, Name: t.Name, Reason: err.Error()})
			continue
		}
		for _, l := range losses {
			c.partial = append(c.partial, fault{Tool: t.Name, Reason: l})
		}
		f.MCPTool = info.defs[t.Name]
		ok, fns = append(ok, t), append(fns, f)
		if info.taskSupport[t.Name] == mcptasks.TaskSupportRequired {
			c.tasked[t.Name] = true
		} else if t.Annotations != nil && t.Annotations.ReadOnlyHint {
			c.readOnly[t.Name] = true
		}
	}
	served := assignNames(ok)
	for i, f := range fns {
		f.Name = served[i]
		c.names[f.Name] = ok[i].Name
		c.doc.Functions = append(c.doc.Functions, *f)
	}
	return c
}

// newDocument is the document of a server without functions: info.title
// is the declared name, info.version the server's own version (1.0.0
// when it gives none).
func newDocument(info serverInfo) *opentool.OpenTool {
	doc := &opentool.OpenTool{
		OpenTool:  opentool.Version,
		Info:      opentool.Info{Title: info.name, Version: "1.0.0", Description: fmt.Sprintf("Tools of the MCP server %q.", info.name)},
		Functions: []opentool.Function{},
	}
	if impl := info.impl; impl != nil {
		if impl.Version != "" {
			doc.Info.Version = impl.Version
		}
		if impl.Name != "" {
			doc.Info.Description = fmt.Sprintf("Tools of the MCP server %q (%s %s).", info.name, impl.Name, impl.Version)
		}
	}
	return doc
}

// function converts one tool; the caller sets the name. err says why the
// tool cannot be served (its input schema is not an object schema, with
// the JSON path); losses say what the OpenTool projection of its schemas
// leaves out ("inputSchema.properties.x.type: ..."), for the log: the
// schemas themselves are kept as declared (InputSchema, OutputSchema),
// and they are what the host checks and serves.
func function(t *mcp.Tool) (f *opentool.Function, losses []string, err error) {
	in, err := schemaMap(t.InputSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP tool %q: inputSchema: %w", t.Name, err)
	}
	params, additional, lost, err := opentool.ProjectParameters(in)
	switch {
	case errors.Is(err, opentool.ErrTooLarge):
		// The projection gives up; the schema is served and checked.
		params, additional = []opentool.Parameter{}, nil
		losses = append(losses, "inputSchema: too large to project onto OpenTool parameters: the function is listed without parameters")
	case err != nil:
		return nil, nil, fmt.Errorf("MCP tool %q: %w", t.Name, schemaError("inputSchema", err))
	}
	for _, l := range lost {
		losses = append(losses, joinPath("inputSchema", l.Path)+": "+l.What)
	}
	params, additional, unnamed := named(params, additional)
	if unnamed {
		losses = append(losses, `inputSchema.properties[""]: a property without a name cannot be an OpenTool parameter: left out of the parameters`)
	}
	f = &opentool.Function{Name: "f", Description: description(t), Parameters: params, AdditionalParameters: additional, InputSchema: declared(in)}
	ret, out, lost, outErr := returnOf(t.OutputSchema)
	if outErr != nil {
		losses = append(losses, "served without a return description: "+outErr.Error())
	}
	for _, l := range lost {
		losses = append(losses, joinPath("outputSchema", l.Path)+": "+l.What)
	}
	f.Return, f.OutputSchema = ret, out
	mcpMembers(t, f)
	if err := validFunction(f); err != nil {
		return nil, nil, fmt.Errorf("MCP tool %q: %w", t.Name, err)
	}
	return f, losses, nil
}

// declared is the input schema m as the host serves and checks it: as
// declared, with "type": "object" when it has no type or a union with
// object (the SDK serves no other), {"type":"object"} for an empty one.
func declared(m map[string]any) json.RawMessage {
	if m["type"] != opentool.TypeObject {
		c := make(map[string]any, len(m)+1)
		maps.Copy(c, m)
		c["type"] = opentool.TypeObject
		m = c
	}
	b, _ := json.Marshal(m) // decoded from JSON: encodes
	return b
}

// named drops a parameter without a name (a property ""), which no
// OpenTool parameter can be; the function then allows undeclared
// parameters (additional nil) so that the projection does not forbid it.
func named(params []opentool.Parameter, additional *bool) ([]opentool.Parameter, *bool, bool) {
	i := slices.IndexFunc(params, func(p opentool.Parameter) bool { return p.Name == "" })
	if i < 0 {
		return params, additional, false
	}
	return slices.Delete(params, i, i+1), nil, true
}

// mcpMembers copies the tool's title, annotations, icons and _meta into
// f, as declared (readOnlyHint and idempotentHint only when true: the SDK
// decodes an absent hint as false, the MCP default).
func mcpMembers(t *mcp.Tool, f *opentool.Function) {
	f.Title = t.Title
	if a := t.Annotations; a != nil {
		f.Annotations = &opentool.Annotations{Title: a.Title, DestructiveHint: a.DestructiveHint, OpenWorldHint: a.OpenWorldHint}
		if a.ReadOnlyHint {
			f.Annotations.ReadOnlyHint = new(true)
		}
		if a.IdempotentHint {
			f.Annotations.IdempotentHint = new(true)
		}
	}
	for _, ic := range t.Icons {
		f.Icons = append(f.Icons, opentool.Icon{Src: ic.Source, MIMEType: ic.MIMEType, Sizes: slices.Clone(ic.Sizes), Theme: string(ic.Theme)})
	}
	if len(t.Meta) > 0 {
		if b, err := json.Marshal(t.Meta); err == nil {
			f.Meta = b
		}
	}
}

// returnOf is the function's return and declared output schema from an
// outputSchema: nil without one. A schema of an object is the result's;
// any other (SEP-2106 allows arrays and primitives) describes the
// "result" member of the object the adapter wraps such a result in
// (resultJSON), and both are of that wrapping object. lost is what the
// OpenTool projection of the return leaves out.
func returnOf(outputSchema any) (*opentool.Return, json.RawMessage, []opentool.Loss, error) {
	if outputSchema == nil {
		return nil, nil, nil, nil
	}
	m, err := schemaMap(outputSchema)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("outputSchema: %w", err)
	}
	if len(m) == 0 {
		m = map[string]any{"type": opentool.TypeObject}
	}
	if m["type"] != opentool.TypeObject {
		m = map[string]any{"type": opentool.TypeObject, "properties": map[string]any{"result": m}, "required": []any{"result"}}
	}
	s, lost, err := opentool.ProjectJSONSchema(m)
	if err != nil {
		return nil, nil, nil, schemaError("outputSchema", err)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("outputSchema: %w", err)
	}
	return &opentool.Return{Name: "result", Description: s.Description, Schema: s}, out, lost, nil
}

// pathError is a schema conversion error: what is wrong at path (a
// JSON path from the tool: "inputSchema.type"). It wraps opentool's
// error (opentool.ErrUnsupportedSchema, opentool.ErrTooLarge).
type pathError struct {
	path string
	what string
	err  error
}

// Error returns "PATH: WHAT".
func (e *pathError) Error() string { return e.path + ": " + e.what }

// Unwrap returns opentool's error.
func (e *pathError) Unwrap() error { return e.err }

// schemaError places err, an error of opentool.ProjectParameters or
// ProjectJSONSchema for the schema at root ("inputSchema"), at its JSON
// path from the tool.
func schemaError(root string, err error) error {
	rest, ok := strings.CutPrefix(err.Error(), opentool.ErrUnsupportedSchema.Error()+" at ")
	if !ok {
		return &pathError{path: root, what: strings.TrimPrefix(err.Error(), "opentool: "), err: err}
	}
	path, what, _ := strings.Cut(rest, ": ")
	return &pathError{path: joinPath(root, path), what: what, err: err}
}

// joinPath appends the JSON path p ("$" or "" for the root,
// "properties.x", "[0]") to root.
func joinPath(root, p string) string {
	switch {
	case p == "" || p == "$":
		return root
	case strings.HasPrefix(p, "["):
		return root + p
	}
	return root + "." + p
}

// validFunction checks f alone as an OpenTool function (a one-function
// document through opentool.Validate), so that a tool whose converted
// schema still breaks a rule of the spec is left out instead of failing
// the whole document. Errors list the faults, paths from the function.
func validFunction(f *opentool.Function) error {
	doc := &opentool.OpenTool{OpenTool: opentool.Version, Info: opentool.Info{Title: "t", Version: "1"}, Functions: []opentool.Function{*f}}
	err := opentool.Validate(doc)
	if err == nil {
		return nil
	}
	return errors.New(strings.ReplaceAll(err.Error(), "functions[0].", ""))
}

// description is the tool's description, led by its title (Title, else
// annotations.title) unless the description already starts with it as
// a word,
// and closed by the hints its annotations set: "(read-only,
// destructive, idempotent)". Without any it is "MCP tool NAME".
func description(t *mcp.Tool) string {
	d := strings.TrimSpace(t.Description)
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title != "" && !startsWithWord(d, title) {
		d = strings.TrimSpace(strings.TrimSuffix(title, ".") + ". " + d)
	}
	if hints := hintsOf(t.Annotations); len(hints) > 0 {
		d = strings.TrimSpace(d + " (" + strings.Join(hints, ", ") + ")")
	}
	if d == "" {
		d = "MCP tool " + t.Name
	}
	return d
}

// startsWithWord reports whether s starts with the word or words w
// ("Remove" starts "Remove the file", not "Removes").
func startsWithWord(s, w string) bool {
	if !strings.HasPrefix(s, w) {
		return false
	}
	rest := strings.TrimPrefix(s, w)
	r, _ := utf8.DecodeRuneInString(rest)
	return rest == "" || !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// hintsOf lists the annotation hints worth telling a model: read-only,
// destructive (set explicitly true, on a tool that is not read-only) and
// idempotent. The spec's defaults (MCP 2025-06-18 "ToolAnnotations")
// add nothing.
func hintsOf(a *mcp.ToolAnnotations) []string {
	if a == nil {
		return nil
	}
	var hints []string
	if a.ReadOnlyHint {
		hints = append(hints, "read-only")
	}
	if !a.ReadOnlyHint && a.DestructiveHint != nil && *a.DestructiveHint {
		hints = append(hints, "destructive")
	}
	if a.IdempotentHint {
		hints = append(hints, "idempotent")
	}
	return hints
}

// assignNames returns the served name of each tool: a name that is
// already a valid OpenTool name is kept; any other has every byte
// outside [a-zA-Z0-9_-] replaced by "_" and is cut to 64 bytes. A name
// taken by an earlier tool (valid names first, then the renamed ones,
// each group in MCP name order) gets the first free suffix "_2", "_3",
// ... (cut to fit). The result depends only on the set of names.
func assignNames(tools []*mcp.Tool) []string {
	out := make([]string, len(tools))
	taken := map[string]bool{}
	for _, pass := range []bool{true, false} {
		for i, t := range tools {
			if opentool.ValidFunctionName(t.Name) != pass {
				continue
			}
			out[i] = uniqueName(validName(t.Name), taken)
			taken[out[i]] = true
		}
	}
	return out
}

// validName makes name valid for OpenTool: every byte outside
// [a-zA-Z0-9_-] becomes "_" (so one non-ASCII rune becomes several),
// cut to 64 bytes; an empty name is "tool".
func validName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "tool"
	}
	return string(b[:min(len(b), maxNameLen)])
}

// uniqueName returns name, or name with the first free suffix "_2",
// "_3", ... (name cut so that the whole fits 64 bytes) when taken has it.
func uniqueName(name string, taken map[string]bool) string {
	if !taken[name] {
		return name
	}
	for i := 2; ; i++ {
		suffix := "_" + strconv.Itoa(i)
		n := name[:min(len(name), maxNameLen-len(suffix))] + suffix
		if !taken[n] {
			return n
		}
	}
}

// schemaMap returns a tool schema (a map as the SDK decodes it, or any
// value that marshals to a JSON object) as a map; nil is an empty map.
func schemaMap(v any) (map[string]any, error) {
	switch s := v.(type) {
	case map[string]any:
		return s, nil
	case nil:
		return map[string]any{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %s", b)
	}
	return m, nil
}
