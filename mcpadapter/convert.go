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

	"github.com/opentool-host/opentool-host/opentool"
)

// This file is the MCP → OpenTool conversion of a tool list (the table in
// doc.go). It is pure: no I/O, no session.

// maxNameLen is the longest OpenTool function name
// (^[a-zA-Z0-9_-]{1,64}$, opentool.ValidFunctionName).
const maxNameLen = 64

// converted is an MCP server's tool list as an OpenTool document.
type converted struct {
	// doc is the OpenTool 1.1.0 document; it passes opentool.Validate.
	doc *opentool.OpenTool
	// names maps each served function name to its MCP tool name.
	names map[string]string
	// dropped lists the tools that are not served and why, in MCP name
	// order.
	dropped []fault
	// partial lists what was left out of tools that are served (an
	// optional parameter, an outputSchema) and why.
	partial []fault
}

// fault is one tool's conversion problem.
type fault struct {
	// Tool is the MCP tool name.
	Tool string
	// Reason names the JSON path and what is wrong.
	Reason string
}

// serverInfo is what the document's info is made of.
type serverInfo struct {
	name string              // the declared server name (the plugin's)
	impl *mcp.Implementation // serverInfo of initialize; may be nil
}

// convert turns the tools of one MCP server into an OpenTool 1.1.0
// document. A tool whose input schema OpenTool cannot express is left
// out (dropped, with the reason); the others are served. Names are made
// valid and unique (assignNames).
func convert(info serverInfo, tools []*mcp.Tool) converted {
	c := converted{doc: newDocument(info), names: map[string]string{}}
	sorted := slices.Clone(tools)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	var ok []*mcp.Tool
	var fns []*opentool.Function
	for _, t := range sorted {
		f, warnings, err := function(t)
		if err != nil {
			c.dropped = append(c.dropped, fault{Tool: t.Name, Reason: err.Error()})
			continue
		}
		for _, w := range warnings {
			c.partial = append(c.partial, fault{Tool: t.Name, Reason: w.Error()})
		}
		ok, fns = append(ok, t), append(fns, f)
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
// tool cannot be served (its input schema, with the JSON path); warnings
// say what was left out of a function that is served: optional
// parameters whose schema does not convert, an outputSchema that does
// not convert.
func function(t *mcp.Tool) (f *opentool.Function, warnings []error, err error) {
	params, additional, skipped, err := parameters(t.InputSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("MCP tool %q: %w", t.Name, err)
	}
	for _, e := range skipped {
		warnings = append(warnings, fmt.Errorf("MCP tool %q: optional parameter left out (it may still be given, unchecked): %w", t.Name, e))
	}
	f = &opentool.Function{Name: "f", Description: description(t), Parameters: params, AdditionalParameters: additional}
	ret, outErr := returnOf(t.OutputSchema)
	if outErr != nil {
		warnings = append(warnings, fmt.Errorf("MCP tool %q: served without a return description: %w", t.Name, outErr))
	}
	f.Return = ret
	if err := validFunction(f); err != nil {
		return nil, nil, fmt.Errorf("MCP tool %q: %w", t.Name, err)
	}
	return f, warnings, nil
}

// parameters converts an inputSchema (an object schema) into one
// parameter per property, in name order, and the object's
// additionalProperties. When the schema does not convert as a whole, each
// property is converted alone (byProperty): an optional one that does not
// convert is left out (skipped) and the function then allows parameters
// it does not declare (additional is nil), so that it may still be
// given; a required one, or a fault outside the properties, is err.
// Errors name the JSON path from the tool
// ("inputSchema.properties.x.allOf").
func parameters(inputSchema any) (params []opentool.Parameter, additional *bool, skipped []error, err error) {
	m, err := schemaMap(inputSchema)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	s, err := objectSchema("inputSchema", m)
	if err != nil {
		return byProperty(m, err)
	}
	if s.Type != opentool.TypeObject {
		return nil, nil, nil, fmt.Errorf("inputSchema.type: %q; a tool's input must be an object", s.Type)
	}
	params = make([]opentool.Parameter, 0, len(s.Properties))
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		params = append(params, opentool.Parameter{Name: name, Description: p.Description, Schema: p, Required: slices.Contains(s.Required, name)})
	}
	if err := checkNames(params); err != nil {
		return nil, nil, nil, err
	}
	return params, s.AdditionalProperties, nil, nil
}

// byProperty converts input schema m property by property, after it
// failed as a whole with whole (see parameters).
func byProperty(m map[string]any, whole error) ([]opentool.Parameter, *bool, []error, error) {
	props, ok := m["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return nil, nil, nil, whole
	}
	required, _ := m["required"].([]any)
	base := maps.Clone(m)
	delete(base, "properties")
	delete(base, "required")
	base["type"] = opentool.TypeObject
	if _, err := objectSchema("inputSchema", base); err != nil {
		return nil, nil, nil, err
	}
	params := make([]opentool.Parameter, 0, len(props))
	var skipped []error
	for _, name := range slices.Sorted(maps.Keys(props)) {
		one := maps.Clone(base)
		one["properties"] = map[string]any{name: props[name]}
		isRequired := slices.Contains(required, any(name))
		if isRequired {
			one["required"] = []any{name}
		}
		s, err := objectSchema("inputSchema", one)
		switch {
		case err != nil && isRequired:
			return nil, nil, nil, err
		case err != nil:
			skipped = append(skipped, err)
			continue
		}
		p := s.Properties[name]
		params = append(params, opentool.Parameter{Name: name, Description: p.Description, Schema: p, Required: isRequired})
	}
	if err := checkNames(params); err != nil {
		return nil, nil, nil, err
	}
	return params, nil, skipped, nil
}

// checkNames refuses a parameter without a name (a property "").
func checkNames(params []opentool.Parameter) error {
	for _, p := range params {
		if p.Name == "" {
			return errors.New(`inputSchema.properties[""]: a property without a name cannot be an OpenTool parameter`)
		}
	}
	return nil
}

// returnOf is the function's return from an outputSchema: nil without
// one. A schema of an object is the result's; any other (SEP-2106 allows
// arrays and primitives) describes the "result" member of the object the
// adapter wraps such a result in (resultJSON).
func returnOf(outputSchema any) (*opentool.Return, error) {
	if outputSchema == nil {
		return nil, nil
	}
	m, err := schemaMap(outputSchema)
	if err != nil {
		return nil, fmt.Errorf("outputSchema: %w", err)
	}
	s, err := objectSchema("outputSchema", m)
	if err != nil {
		return nil, err
	}
	if s.Type != opentool.TypeObject {
		s = &opentool.Schema{Type: opentool.TypeObject, Properties: map[string]*opentool.Schema{"result": s}, Required: []string{"result"}}
	}
	return &opentool.Return{Name: "result", Description: s.Description, Schema: s}, nil
}

// objectSchema converts the tool schema m at root ("inputSchema",
// "outputSchema"; an empty one is {"type": "object"}) with
// opentool.FromJSONSchema: local $refs inlined, single-branch
// anyOf/oneOf taken. Errors are *pathError.
func objectSchema(root string, m map[string]any) (*opentool.Schema, error) {
	if len(m) == 0 {
		m = map[string]any{"type": opentool.TypeObject}
	}
	s, err := opentool.FromJSONSchema(m)
	if err != nil {
		return nil, schemaError(root, err)
	}
	return s, nil
}

// pathError is a schema conversion error: what is wrong at path (a
// JSON path from the tool: "inputSchema.properties.x.allOf"). It wraps
// opentool's error (opentool.ErrUnsupportedSchema, *opentool.RefError,
// opentool.ErrTooLarge).
type pathError struct {
	path string
	what string
	err  error
}

// Error returns "PATH: WHAT".
func (e *pathError) Error() string { return e.path + ": " + e.what }

// Unwrap returns opentool's error.
func (e *pathError) Unwrap() error { return e.err }

// schemaError places err, an error of opentool.FromJSONSchema for the
// schema at root ("inputSchema"), at its JSON path from the tool.
func schemaError(root string, err error) error {
	var re *opentool.RefError
	if errors.As(err, &re) {
		what := strings.TrimPrefix(re.Error(), "opentool: "+re.Path+": ")
		return &pathError{path: joinPath(root, re.Path), what: what, err: err}
	}
	rest, ok := strings.CutPrefix(err.Error(), opentool.ErrUnsupportedSchema.Error()+" at ")
	if !ok {
		return &pathError{path: root, what: strings.TrimPrefix(err.Error(), "opentool: "), err: err}
	}
	path, what, _ := strings.Cut(rest, ": ")
	return &pathError{path: joinPath(root, path), what: "not expressible in OpenTool: " + what, err: err}
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

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]*opentool.Schema) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
