package opentool

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrInvalidDocument is matched (errors.Is) by every *ValidationError, and
// wrapped by the errors of this package that reject a document's content.
var ErrInvalidDocument = errors.New("opentool: invalid document")

// Fault is one rule violation found by ValidateJSON.
//
// Path is the JSON path of the offending (or, for a missing field, absent)
// value, in the form "functions[3].parameters[0].schema.items"; map keys
// that are not plain names are quoted: `schemas["a.b"]`. Faults about the
// document as a whole (not JSON, not an object) have Path "$".
type Fault struct {
	Path    string
	Message string
}

// String returns "path: message", e.g.
// "functions[3].parameters[0].schema.items: required when type is array".
func (f Fault) String() string {
	if f.Path == "" {
		return f.Message
	}
	return f.Path + ": " + f.Message
}

// ValidationError is the error of ValidateJSON, Validate and Parse: every
// fault of a document, in document order (by the byte offset of the value at
// fault; a missing field sorts at the start of the object that lacks it).
// errors.Is(err, ErrInvalidDocument) is true for it.
type ValidationError struct {
	Faults []Fault
}

// Error returns the faults, one "path: message" per line, in the order of
// Faults (document order when built by this package).
func (e *ValidationError) Error() string {
	if len(e.Faults) == 0 {
		return ErrInvalidDocument.Error()
	}
	lines := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		lines[i] = f.String()
	}
	return strings.Join(lines, "\n")
}

// Is reports whether target is ErrInvalidDocument.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidDocument }

// Validate checks doc against the rules of ValidateJSON by encoding it with
// encoding/json first, so it sees exactly what would be sent on the wire.
//
// It returns nil or a *ValidationError (a document that cannot be encoded,
// e.g. one with a NaN enum value, gives a single fault at path "$").
func Validate(doc *OpenTool) error {
	data, err := json.Marshal(doc)
	if err != nil {
		return &ValidationError{Faults: []Fault{{Path: rootPath, Message: "cannot be encoded as JSON: " + err.Error()}}}
	}
	return ValidateJSON(data)
}

// ValidateJSON checks the raw JSON of an OpenTool document against spec
// 1.1.0 "Objects" (plus the 2.0 "stream" field) and returns nil or a
// *ValidationError listing every fault, in document order.
//
// It walks a generic decoded tree, so a missing field ("info.title:
// required") is told apart from a zero value and from a value of the wrong
// JSON type ("functions[0].name: must be a string"). Unknown fields are
// allowed; null for an optional field means absent. The rules:
//
//   - opentool: required, non-empty string. info: required object with
//     title and version (required strings) and description (string).
//     server: object with url (required string) and description.
//   - functions: required array (may be empty). Each function: name
//     required, matching ^[a-zA-Z0-9_-]{1,64}$ and unique in the document;
//     description required string; parameters required array; return a
//     Return object or null; stream an object with data (a Return object);
//     additionalParameters (an extension: false refuses parameters the
//     function does not declare) a boolean.
//   - Parameter: name required, non-empty and unique in its function;
//     description string; schema required; required a required boolean.
//     Return: name required string; description string; schema required.
//   - Schema: either a reference {"$ref": "#/schemas/Name"} to an existing
//     entry of schemas (a sibling description is allowed; type, properties,
//     items, enum and required are not), or an object whose type is one of
//     boolean, integer, number, string, array and object. properties (a map
//     of schemas) is required for, and only allowed on, type object; items
//     likewise for array. enum is a non-empty array of values of the type
//     (not allowed for array and object). required is an array of strings
//     naming declared properties, only on objects. additionalProperties
//     (an extension: false refuses undeclared members) is a boolean, only
//     on objects.
//   - schemas: a map of schemas with non-empty names; "$ref" cycles among
//     them (also through properties and items) are faults naming the cycle.
//   - Extensions (types.go): a function's inputSchema is an object whose
//     type is "object", outputSchema an object, title a string,
//     annotations an object (title a string, readOnlyHint,
//     destructiveHint, idempotentHint and openWorldHint booleans), icons
//     an array of objects (src a required string; mimeType and theme
//     strings; sizes strings), _meta and mcpTool objects (mcpTool, an MCP
//     server's own definition, is not checked further), execution an
//     object whose taskSupport is "forbidden", "optional" or "required". The document's refused is
//     an array of objects with kind, name and reason (required strings).
//     The JSON Schemas themselves (inputSchema, outputSchema, the extra
//     keywords of a Schema Object) are not checked here: the host compiles
//     them (package argcheck).
//
// Data that is not one JSON value gives a single fault at path "$" whose
// message has the byte offset of the syntax error.
func ValidateJSON(data []byte) error {
	root, fault := decodeTree(data)
	if fault != nil {
		return &ValidationError{Faults: []Fault{*fault}}
	}
	v := &validator{edges: map[string][]refEdge{}}
	v.document(root)
	return v.err()
}

// validator collects the faults of one document.
type validator struct {
	faults  []offFault
	schemas *node // the "schemas" object, nil when absent or not an object
	edges   map[string][]refEdge
}

// offFault is a fault with the byte offset it is sorted by; the path is
// rendered when the error is built.
type offFault struct {
	off  int64
	path *jpath
	msg  string
}

// refEdge is a "$ref" found inside the named schema it belongs to.
type refEdge struct {
	to   string
	path *jpath
	off  int64
}

func (v *validator) add(off int64, p *jpath, format string, args ...any) {
	v.faults = append(v.faults, offFault{off, p, fmt.Sprintf(format, args...)})
}

func (v *validator) err() error {
	if len(v.faults) == 0 {
		return nil
	}
	sort.SliceStable(v.faults, func(i, j int) bool { return v.faults[i].off < v.faults[j].off })
	faults := make([]Fault, len(v.faults))
	for i, f := range v.faults {
		faults[i] = Fault{Path: f.path.String(), Message: f.msg}
	}
	return &ValidationError{Faults: faults}
}

// expect adds a fault unless n has kind k, and reports whether it has.
func (v *validator) expect(n *node, p *jpath, k kind) bool {
	if n.kind == k {
		return true
	}
	v.add(n.off, p, "must be %s", kindNames[k])
	return false
}

var kindNames = [...]string{
	kindNull:   "null",
	kindBool:   "a boolean",
	kindNumber: "a number",
	kindString: "a string",
	kindArray:  "an array",
	kindObject: "an object",
}

// required returns member key of obj (at p), adding a "required" fault (at
// obj) when it is absent or null, or a type fault when it is not of kind k.
func (v *validator) required(obj *node, p *jpath, key string, k kind) *node {
	c := obj.get(key)
	if c == nil {
		v.add(obj.off, p.field(key), "required")
		return nil
	}
	if !v.expect(c, p.field(key), k) {
		return nil
	}
	return c
}

// optional returns member key of obj when present and of kind k, adding a
// type fault when it is present with another kind.
func (v *validator) optional(obj *node, p *jpath, key string, k kind) *node {
	c := obj.get(key)
	if c == nil || !v.expect(c, p.field(key), k) {
		return nil
	}
	return c
}

func (v *validator) document(root *node) {
	if !v.expect(root, dollarPath, kindObject) {
		return
	}
	var top *jpath
	v.schemas = v.optional(root, top, "schemas", kindObject)

	if s := v.required(root, top, "opentool", kindString); s != nil && s.s == "" {
		v.add(s.off, top.field("opentool"), "must not be empty")
	} else if s != nil && !supportedVersion(s.s) {
		v.add(s.off, top.field("opentool"), "version %q is not supported: this host reads OpenTool 1.x (1.0.0, 1.1.0)", s.s)
	}
	if info := v.required(root, top, "info", kindObject); info != nil {
		p := top.field("info")
		v.required(info, p, "title", kindString)
		v.optional(info, p, "description", kindString)
		v.required(info, p, "version", kindString)
	}
	if server := v.optional(root, top, "server", kindObject); server != nil {
		p := top.field("server")
		v.required(server, p, "url", kindString)
		v.optional(server, p, "description", kindString)
	}
	if fns := v.required(root, top, "functions", kindArray); fns != nil {
		p := top.field("functions")
		first := map[string]*jpath{}
		for i, fn := range fns.arr {
			v.function(fn, p.index(i), first)
		}
	}
	if refused := v.optional(root, top, "refused", kindArray); refused != nil {
		for i, r := range refused.arr {
			rp := top.field("refused").index(i)
			if v.expect(r, rp, kindObject) {
				v.required(r, rp, "kind", kindString)
				v.required(r, rp, "name", kindString)
				v.required(r, rp, "reason", kindString)
			}
		}
	}
	if v.schemas != nil {
		p := top.field("schemas")
		for _, name := range v.schemas.keys {
			s := v.schemas.obj[name]
			if name == "" {
				v.add(s.off, p.key(name), "name must not be empty")
			}
			v.schema(s, p.key(name), name)
		}
		v.cycles()
	}
}

// function checks one function at p; first maps each name seen to the
// path of the function that has it first.
func (v *validator) function(fn *node, p *jpath, first map[string]*jpath) {
	if !v.expect(fn, p, kindObject) {
		return
	}
	if name := v.required(fn, p, "name", kindString); name != nil {
		if !ValidFunctionName(name.s) {
			v.add(name.off, p.field("name"), "must match ^[a-zA-Z0-9_-]{1,64}$ (got %q)", name.s)
		}
		if q, dup := first[name.s]; dup {
			v.add(name.off, p.field("name"), "duplicate function name %q (first at %s)", name.s, q)
		} else {
			first[name.s] = p
		}
	}
	v.required(fn, p, "description", kindString)
	v.optional(fn, p, "additionalParameters", kindBool)
	if params := v.required(fn, p, "parameters", kindArray); params != nil {
		seen := map[string]*jpath{}
		for j, pn := range params.arr {
			v.parameter(pn, p.field("parameters").index(j), seen)
		}
	}
	if ret := v.optional(fn, p, "return", kindObject); ret != nil {
		v.returnObject(ret, p.field("return"))
	}
	if stream := v.optional(fn, p, "stream", kindObject); stream != nil {
		sp := p.field("stream")
		if data := v.required(stream, sp, "data", kindObject); data != nil {
			v.returnObject(data, sp.field("data"))
		}
	}
	v.extensions(fn, p)
}

// extensions checks the extension members of a function: inputSchema
// (an object schema), outputSchema (an object), title, annotations,
// icons, _meta, mcpTool and execution (MCP "Tool").
func (v *validator) extensions(fn *node, p *jpath) {
	if in := v.optional(fn, p, "inputSchema", kindObject); in != nil {
		if t := in.get("type"); t == nil || t.kind != kindString || t.s != TypeObject {
			off := in.off
			if t != nil {
				off = t.off
			}
			v.add(off, p.field("inputSchema").field("type"), `must be "object": the arguments of a call are an object`)
		}
	}
	v.optional(fn, p, "outputSchema", kindObject)
	v.optional(fn, p, "title", kindString)
	if a := v.optional(fn, p, "annotations", kindObject); a != nil {
		ap := p.field("annotations")
		v.optional(a, ap, "title", kindString)
		for _, h := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			v.optional(a, ap, h, kindBool)
		}
	}
	if icons := v.optional(fn, p, "icons", kindArray); icons != nil {
		for i, ic := range icons.arr {
			ip := p.field("icons").index(i)
			if !v.expect(ic, ip, kindObject) {
				continue
			}
			v.required(ic, ip, "src", kindString)
			v.optional(ic, ip, "mimeType", kindString)
			v.optional(ic, ip, "theme", kindString)
			if sizes := v.optional(ic, ip, "sizes", kindArray); sizes != nil {
				for j, sz := range sizes.arr {
					v.expect(sz, ip.field("sizes").index(j), kindString)
				}
			}
		}
	}
	v.optional(fn, p, "_meta", kindObject)
	v.optional(fn, p, "mcpTool", kindObject)
	if ex := v.optional(fn, p, "execution", kindObject); ex != nil {
		if ts := v.optional(ex, p.field("execution"), "taskSupport", kindString); ts != nil {
			switch ts.s {
			case TaskSupportForbidden, TaskSupportOptional, TaskSupportRequired:
			default:
				v.add(ts.off, p.field("execution").field("taskSupport"), "must be %q, %q or %q, not %q", TaskSupportForbidden, TaskSupportOptional, TaskSupportRequired, ts.s)
			}
		}
	}
}

// parameter checks one Parameter object; seen maps names to their paths.
func (v *validator) parameter(pn *node, p *jpath, seen map[string]*jpath) {
	if !v.expect(pn, p, kindObject) {
		return
	}
	if name := v.required(pn, p, "name", kindString); name != nil {
		switch first, dup := seen[name.s]; {
		case name.s == "":
			v.add(name.off, p.field("name"), "must not be empty")
		case dup:
			v.add(name.off, p.field("name"), "duplicate parameter name %q (first at %s)", name.s, first)
		default:
			seen[name.s] = p
		}
	}
	v.optional(pn, p, "description", kindString)
	if s := pn.get("schema"); s == nil {
		v.add(pn.off, p.field("schema"), "required")
	} else {
		v.schema(s, p.field("schema"), "")
	}
	v.required(pn, p, "required", kindBool)
}

// returnObject checks a Return object (a function's return or stream data).
func (v *validator) returnObject(r *node, p *jpath) {
	v.required(r, p, "name", kindString)
	v.optional(r, p, "description", kindString)
	if s := r.get("schema"); s == nil {
		v.add(r.off, p.field("schema"), "required")
	} else {
		v.schema(s, p.field("schema"), "")
	}
}

// schema checks a Schema object at p. owner is the name of the entry of
// schemas it is part of ("" outside schemas), for the cycle check.
func (v *validator) schema(n *node, p *jpath, owner string) {
	if !v.expect(n, p, kindObject) {
		return
	}
	if _, isRef := n.obj["$ref"]; isRef {
		v.ref(n, p, owner)
		return
	}
	typ := ""
	if t := v.required(n, p, "type", kindString); t != nil {
		switch t.s {
		case TypeBoolean, TypeInteger, TypeNumber, TypeString, TypeArray, TypeObject:
			typ = t.s
		default:
			v.add(t.off, p.field("type"), "must be one of boolean, integer, number, string, array, object (got %q)", t.s)
		}
	}
	v.optional(n, p, "description", kindString)

	var props *node
	switch pr := n.get("properties"); {
	case pr == nil:
		if typ == TypeObject {
			v.add(n.off, p.field("properties"), "required when type is object")
		}
	case typ != "" && typ != TypeObject:
		v.add(pr.off, p.field("properties"), "only allowed when type is object")
	case v.expect(pr, p.field("properties"), kindObject):
		props = pr
		pp := p.field("properties")
		for _, key := range pr.keys {
			v.schema(pr.obj[key], pp.key(key), owner)
		}
	}

	switch it := n.get("items"); {
	case it == nil:
		if typ == TypeArray {
			v.add(n.off, p.field("items"), "required when type is array")
		}
	case typ != "" && typ != TypeArray:
		v.add(it.off, p.field("items"), "only allowed when type is array")
	default:
		v.schema(it, p.field("items"), owner)
	}

	switch e := n.get("enum"); {
	case e == nil:
	case typ == TypeArray || typ == TypeObject:
		v.add(e.off, p.field("enum"), "not allowed when type is %s", typ)
	case !v.expect(e, p.field("enum"), kindArray):
	case len(e.arr) == 0:
		v.add(e.off, p.field("enum"), "must not be empty")
	default:
		ep := p.field("enum")
		for i, val := range e.arr {
			v.enumValue(val, ep.index(i), typ)
		}
	}

	switch r := n.get("required"); {
	case r == nil:
	case typ != "" && typ != TypeObject:
		v.add(r.off, p.field("required"), "only allowed when type is object")
	case !v.expect(r, p.field("required"), kindArray):
	default:
		rp := p.field("required")
		for i, name := range r.arr {
			if !v.expect(name, rp.index(i), kindString) || props == nil {
				continue
			}
			if _, ok := props.obj[name.s]; !ok {
				v.add(name.off, rp.index(i), "%q is not a declared property", name.s)
			}
		}
	}

	switch a := n.get("additionalProperties"); {
	case a == nil:
	case typ != "" && typ != TypeObject:
		v.add(a.off, p.field("additionalProperties"), "only allowed when type is object")
	default:
		v.expect(a, p.field("additionalProperties"), kindBool)
	}
}

// enumValue checks that an enum value has the schema's type ("" = unknown).
func (v *validator) enumValue(val *node, p *jpath, typ string) {
	switch typ {
	case TypeString:
		v.expect(val, p, kindString)
	case TypeBoolean:
		v.expect(val, p, kindBool)
	case TypeNumber, TypeInteger:
		if val.kind != kindNumber || typ == TypeInteger && !isIntegerLiteral(val.s) {
			v.add(val.off, p, "must be %s", map[string]string{TypeNumber: "a number", TypeInteger: "an integer"}[typ])
		} else if _, ok := parseNumber(val.s); !ok {
			v.add(val.off, p, "number out of range")
		}
	}
}

// ref checks a reference schema {"$ref": "#/schemas/Name"}.
func (v *validator) ref(n *node, p *jpath, owner string) {
	r := n.obj["$ref"]
	rp := p.field("$ref")
	if v.expect(r, rp, kindString) {
		name, ok := RefName(r.s)
		switch {
		case !ok:
			v.add(r.off, rp, "must be of the form \"#/schemas/Name\" (got %q)", r.s)
		case v.schemas == nil || v.schemas.obj[name] == nil:
			v.add(r.off, rp, "unknown schema %q", name)
		case owner != "":
			v.edges[owner] = append(v.edges[owner], refEdge{to: name, path: rp, off: r.off})
		}
	}
	for _, key := range n.keys {
		switch key {
		case "type", "properties", "items", "enum", "required", "additionalProperties":
			v.add(n.obj[key].off, p.field(key), "not allowed with $ref")
		}
	}
	v.optional(n, p, "description", kindString)
}

// cycles adds a fault for every "$ref" that closes a cycle among the
// entries of schemas, found by a depth-first search in document order.
func (v *validator) cycles() {
	const (
		unseen = iota
		onStack
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onStack
		stack = append(stack, name)
		for _, e := range v.edges[name] {
			switch state[e.to] {
			case unseen:
				visit(e.to)
			case onStack:
				i := len(stack) - 1
				for stack[i] != e.to {
					i--
				}
				cycle := append(append([]string(nil), stack[i:]...), e.to)
				v.add(e.off, e.path, "$ref cycle: %s", strings.Join(cycle, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, name := range v.schemas.keys {
		if state[name] == unseen {
			visit(name)
		}
	}
}

// supportedVersion reports whether an "opentool" member names a version
// of major version 1 (1.0.0, 1.1.0; "1" and "1.1" too), the versions
// whose documents this package reads (specification 1.1.0, "OpenTool
// Object": minor versions are compatible).
func supportedVersion(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	return major == "1"
}
