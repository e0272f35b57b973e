package opentool

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// This file projects any JSON Schema (draft 2020-12) onto OpenTool's Schema
// Object. Unlike FromJSONSchema, which refuses what it cannot convert
// exactly, the projection always gives a valid OpenTool schema and lists
// what it leaves out or narrows (Loss): the schema as declared is kept
// beside it (Function.InputSchema, Function.OutputSchema), and the host
// checks and serves that one. The projection is for OpenTool readers.
//
// It is built so that a call an OpenTool reader makes by following the
// projection is, where possible, one the declared schema accepts: a type
// union is projected as one of its types, anyOf/oneOf as one branch, a
// schema without a type as the type its keywords suggest (a string when
// none does). Constraints without subschemas ("minimum", "pattern",
// "format", "default", ...) are kept as extra keywords (Schema.Extra).

// Loss is one thing the OpenTool projection of a JSON Schema
// (ProjectJSONSchema, ProjectParameters) leaves out or narrows.
type Loss struct {
	// Path is the JSON path, in the JSON Schema, of what is lost
	// ("properties.x.anyOf", "$defs.A.type"); "" for the root.
	Path string
	// What says what the projection did, e.g. `type ["boolean","string"]
	// projected as "boolean"`.
	What string
}

// String returns "PATH: WHAT" ("WHAT" for the root).
func (l Loss) String() string {
	if l.Path == "" {
		return l.What
	}
	return l.Path + ": " + l.What
}

// keptKeywords are the JSON Schema keywords without subschemas that a
// projection keeps as extra keywords (Schema.Extra) as they are written:
// annotations and assertions on one value. Keywords starting with "x-"
// (vendor annotations) are kept too.
var keptKeywords = map[string]bool{
	"title": true, "default": true, "examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
	"format": true, "contentEncoding": true, "contentMediaType": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minLength": true, "maxLength": true, "pattern": true,
	"minItems": true, "maxItems": true, "uniqueItems": true, "minContains": true, "maxContains": true,
	"minProperties": true, "maxProperties": true, "dependentRequired": true,
}

// silentKeywords are read by the projection itself or change nothing it
// projects: no loss is recorded for them.
var silentKeywords = map[string]bool{
	"$schema": true, "$id": true, "$anchor": true, "$defs": true, "definitions": true, "$vocabulary": true,
	"type": true, "description": true, "properties": true, "items": true, "enum": true, "const": true,
	"required": true, "additionalProperties": true, "$ref": true, "allOf": true, "anyOf": true, "oneOf": true,
}

// ProjectJSONSchema returns the OpenTool Schema Object (spec 1.1.0) that
// stands for the JSON Schema js (draft 2020-12; a map as json.Unmarshal
// makes it, with or without UseNumber, or a boolean schema), and what the
// projection loses; no losses means the projection accepts exactly what
// js accepts. The result passes validation. The rules:
//
//   - "type": a string is kept; a union is projected as its first type
//     other than "null" (["boolean","string"] is "boolean"); a schema
//     without a type takes the one its keywords imply (properties: object,
//     items: array, enum or const values, "pattern": string, "minimum":
//     number, ...), else "string". A boolean schema true is "string".
//   - "$ref" to a local JSON Pointer ("#/$defs/X", "#") or anchor
//     ("#name") is inlined; a recursive one is cut (an object without
//     properties, or the target's type) at the recursion.
//   - "allOf" branches and a "$ref" target are merged with the schema
//     (type, properties and required united, the schema's own members
//     first).
//   - "anyOf"/"oneOf": on a schema without a type, its first branch that
//     is not {"type":"null"}; on a typed schema they are left out.
//   - "enum" keeps the values of the projected type ("const" is a
//     one-value enum); "required" the names of declared properties;
//     "additionalProperties" its boolean form.
//   - Keywords without subschemas ("minimum", "maximum", "pattern",
//     "format", "default", "title", "minItems", ..., and "x-" vendor
//     keywords) are kept in Extra as written.
//   - Everything else ("not", "if"/"then"/"else", "prefixItems",
//     "patternProperties", "additionalProperties" as a schema, a remote
//     "$ref", ...) is left out.
//
// Each narrowing or omission is one Loss. Errors: ErrTooLarge when the
// projection would build more than MaxInlineSchemas schemas.
func ProjectJSONSchema(js any) (*Schema, []Loss, error) {
	p := &projector{root: js}
	s := p.node(js, nil)
	if p.err != nil {
		return nil, nil, p.err
	}
	p.tidy(s, nil)
	return s, p.losses, nil
}

// ProjectParameters returns the OpenTool parameters that stand for
// inputSchema, the JSON Schema of a call's arguments object (an MCP
// tool's inputSchema): one parameter per property of its projection
// (ProjectJSONSchema), in name order, each with the property's
// description and required as the schema says, and the projection's
// additionalProperties as the function's additionalParameters; and what
// the projection loses. A root without a type, or whose type is a union
// with "object", is taken as an object (arguments are one).
//
// Errors: ErrTooLarge; an error wrapping ErrUnsupportedSchema when
// inputSchema's type does not allow an object ("type": "string").
func ProjectParameters(inputSchema map[string]any) ([]Parameter, *bool, []Loss, error) {
	// The arguments are an object: the root's type is object when it has
	// none or a union with object.
	if t, ok := inputSchema["type"]; !ok || t != TypeObject {
		types, _ := stringList(t)
		if ok && !slices.Contains(types, TypeObject) {
			return nil, nil, nil, fmt.Errorf("%w at type: %s: the arguments of a call are an object", ErrUnsupportedSchema, compactJSON(t))
		}
		m := make(map[string]any, len(inputSchema)+1)
		maps.Copy(m, inputSchema)
		m["type"] = TypeObject
		inputSchema = m
	}
	s, losses, err := ProjectJSONSchema(inputSchema)
	if err != nil {
		return nil, nil, nil, err
	}
	if s.Type != TypeObject {
		losses = append(losses, Loss{What: fmt.Sprintf("not an object schema (projected as %s): taken as an object without declared properties", s.Type)})
		s = &Schema{Type: TypeObject, Properties: map[string]*Schema{}}
	}
	params := make([]Parameter, 0, len(s.Properties))
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		ps := s.Properties[name]
		desc := ps.Description
		ps.Description = ""
		params = append(params, Parameter{Name: name, Description: desc, Schema: ps, Required: slices.Contains(s.Required, name)})
	}
	return params, s.AdditionalProperties, losses, nil
}

// projector projects one JSON Schema document.
type projector struct {
	root   any
	stack  []string // "$ref"s being expanded
	count  int
	losses []Loss
	err    error // ErrTooLarge, once
}

// lose records a loss at path.
func (p *projector) lose(path *jpath, format string, args ...any) {
	p.losses = append(p.losses, Loss{Path: path.String(), What: fmt.Sprintf(format, args...)})
}

// node projects the schema v found at path. The result has a type; tidy
// makes it valid.
func (p *projector) node(v any, path *jpath) *Schema {
	if p.count++; p.count > MaxInlineSchemas {
		if p.err == nil {
			p.err = fmt.Errorf("%w: more than %d schemas at %s", ErrTooLarge, MaxInlineSchemas, path.orRoot())
		}
		return &Schema{Type: TypeString}
	}
	m, ok := v.(map[string]any)
	if !ok {
		switch v {
		case true:
			p.lose(path, "any value (true): projected as type string")
		case false:
			p.lose(path, "no value (false): projected as type string")
		default:
			p.lose(path, "not a schema (%T): projected as type string", v)
		}
		return &Schema{Type: TypeString}
	}
	s := p.own(m, path)
	if ref, ok := m["$ref"]; ok {
		p.merge(s, p.ref(ref, path.jsKey("$ref")), path.jsKey("$ref"))
	}
	if all, ok := m["allOf"].([]any); ok {
		ap := path.jsKey("allOf")
		p.lose(ap, "allOf merged into one schema")
		for i, b := range all {
			if b == true {
				continue
			}
			p.merge(s, p.node(b, ap.index(i)), ap.index(i))
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, ok := m[k].([]any)
		if !ok {
			continue
		}
		kp := path.jsKey(k)
		if s.Type != "" {
			p.lose(kp, "left out (the schema has a type)")
			continue
		}
		p.alternatives(s, alts, kp)
	}
	if s.Type == "" {
		s.Type = p.infer(s, path)
	}
	return s
}

// own projects the members of m other than $ref, allOf, anyOf and oneOf.
// The type stays "" when m has none.
func (p *projector) own(m map[string]any, path *jpath) *Schema {
	s := &Schema{}
	if d, ok := m["description"].(string); ok {
		s.Description = d
	}
	if t, ok := m["type"]; ok {
		s.Type = p.typeOf(t, path.jsKey("type"))
	}
	// properties and items apply to objects and arrays only: on another
	// type they change nothing.
	if props, ok := m["properties"].(map[string]any); ok && (s.Type == "" || s.Type == TypeObject) {
		pp := path.jsKey("properties")
		s.Properties = make(map[string]*Schema, len(props))
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if props[k] == false {
				p.lose(pp.key(k), "no value (false): the property is left out")
				continue
			}
			s.Properties[k] = p.node(props[k], pp.key(k))
		}
	}
	if it, ok := m["items"]; ok && it != nil && (s.Type == "" || s.Type == TypeArray) {
		ip := path.jsKey("items")
		switch it.(type) {
		case map[string]any, bool:
			s.Items = p.node(it, ip)
		default:
			p.lose(ip, "not a schema (%T): left out", it)
		}
	}
	if e, ok := m["enum"]; ok {
		if vals, ok := e.([]any); ok {
			s.Enum = slices.Clone(vals)
			if s.Enum == nil {
				s.Enum = []any{}
			}
		} else if strs, ok := e.([]string); ok {
			for _, v := range strs {
				s.Enum = append(s.Enum, v)
			}
		}
	} else if c, ok := m["const"]; ok {
		s.Enum = []any{c}
	}
	if r, ok := stringList(m["required"]); ok && len(r) > 0 {
		s.Required = r
	}
	switch ap := m["additionalProperties"].(type) {
	case nil:
	case bool:
		s.AdditionalProperties = new(ap)
	default:
		p.lose(path.jsKey("additionalProperties"), "a schema: left out (any member allowed)")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch {
		case keptKeywords[k] || strings.HasPrefix(k, "x-"):
			raw, err := json.Marshal(m[k])
			if err != nil {
				p.lose(path.jsKey(k), "cannot be encoded: left out")
				continue
			}
			if s.Extra == nil {
				s.Extra = map[string]json.RawMessage{}
			}
			s.Extra[k] = raw
		case !silentKeywords[k]:
			p.lose(path.jsKey(k), "not expressible in OpenTool: left out")
		}
	}
	return s
}

// typeOf projects a "type" value; "" when it names no OpenTool type.
func (p *projector) typeOf(t any, tp *jpath) string {
	types, ok := stringList(t)
	if !ok {
		p.lose(tp, "not a string or an array of strings: left out")
		return ""
	}
	var valid []string
	null := false
	for _, ty := range types {
		switch ty {
		case TypeBoolean, TypeInteger, TypeNumber, TypeString, TypeArray, TypeObject:
			valid = append(valid, ty)
		case "null":
			null = true
		default:
			p.lose(tp, "unknown type %q left out", ty)
		}
	}
	switch {
	case len(valid) == 0 && null:
		p.lose(tp, "null: not expressible in OpenTool")
		return ""
	case len(valid) == 0:
		return ""
	case len(valid) > 1:
		p.lose(tp, "type %s projected as %q", compactJSON(types), valid[0])
	case null:
		p.lose(tp, "null is not allowed by the projection (type %q)", valid[0])
	}
	return valid[0]
}

// alternatives projects anyOf/oneOf alts (at kp) into the untyped s: its
// first branch that is not {"type":"null"}.
func (p *projector) alternatives(s *Schema, alts []any, kp *jpath) {
	keep := -1
	null := false
	for i, a := range alts {
		if isNullSchema(a) {
			null = true
			continue
		}
		if keep < 0 {
			keep = i
		}
	}
	switch {
	case keep < 0:
		p.lose(kp, "no branch other than null: left out")
		return
	case len(alts)-btoi(null) > 1:
		p.lose(kp, "%d branches projected as the first, %s", len(alts), kp.index(keep).String())
	case null:
		p.lose(kp, "null is not allowed by the projection")
	}
	p.merge(s, p.node(alts[keep], kp.index(keep)), kp.index(keep))
}

// btoi is 1 for true.
func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ref resolves and projects the "$ref" value ref (at rp).
func (p *projector) ref(ref any, rp *jpath) *Schema {
	r, ok := ref.(string)
	if !ok {
		p.lose(rp, "not a string: left out")
		return &Schema{}
	}
	target, tpath, ok := p.resolve(r)
	if !ok {
		p.lose(rp, "%q is not a local reference this projection follows: left out", r)
		return &Schema{}
	}
	if slices.Contains(p.stack, r) {
		p.lose(rp, "recursive reference %q cut", r)
		s := &Schema{}
		if m, ok := target.(map[string]any); ok {
			if t, ok := m["type"].(string); ok && t != TypeArray {
				s.Type = t
			}
		}
		if s.Type == "" || s.Type == TypeObject {
			s.Type = TypeObject
		}
		return s
	}
	p.stack = append(p.stack, r)
	s := p.node(target, tpath)
	p.stack = p.stack[:len(p.stack)-1]
	return s
}

// resolve finds the target of a local reference: a JSON Pointer ("#",
// "#/$defs/X") or an anchor ("#name", a "$anchor" anywhere in the root).
func (p *projector) resolve(ref string) (any, *jpath, bool) {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, nil, false
	}
	if rest == "" || rest[0] == '/' {
		c := &fromJSON{root: asMap(p.root)}
		return c.pointer(ref)
	}
	var found any
	var at *jpath
	var walk func(v any, path *jpath) bool
	walk = func(v any, path *jpath) bool {
		switch t := v.(type) {
		case map[string]any:
			if t["$anchor"] == rest {
				found, at = t, path
				return true
			}
			for _, k := range slices.Sorted(maps.Keys(t)) {
				if walk(t[k], path.jsKey(k)) {
					return true
				}
			}
		case []any:
			for i, e := range t {
				if walk(e, path.index(i)) {
					return true
				}
			}
		}
		return false
	}
	if walk(p.root, nil) {
		return found, at, true
	}
	return nil, nil, false
}

// asMap returns v as a map, or an empty one.
func asMap(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

// merge folds src (a $ref target or an allOf branch, at path) into dst:
// dst's own members come first; types must agree (integer and number give
// integer), properties and required are united.
func (p *projector) merge(dst, src *Schema, path *jpath) {
	switch {
	case src.Type == "" || src.Type == dst.Type:
	case dst.Type == "":
		dst.Type = src.Type
	case dst.Type == TypeNumber && src.Type == TypeInteger:
		dst.Type = TypeInteger
	case dst.Type == TypeInteger && src.Type == TypeNumber:
	default:
		p.lose(path, "type %q does not agree with %q: left out", src.Type, dst.Type)
		return
	}
	if dst.Description == "" {
		dst.Description = src.Description
	}
	if src.Properties != nil {
		if dst.Properties == nil {
			dst.Properties = map[string]*Schema{}
		}
		for k, v := range src.Properties {
			if _, ok := dst.Properties[k]; !ok {
				dst.Properties[k] = v
			}
		}
	}
	if dst.Items == nil {
		dst.Items = src.Items
	}
	if dst.Enum == nil {
		dst.Enum = src.Enum
	}
	for _, r := range src.Required {
		if !slices.Contains(dst.Required, r) {
			dst.Required = append(dst.Required, r)
		}
	}
	if dst.AdditionalProperties == nil {
		dst.AdditionalProperties = src.AdditionalProperties
	}
	for k, v := range src.Extra {
		if _, ok := dst.Extra[k]; !ok {
			if dst.Extra == nil {
				dst.Extra = map[string]json.RawMessage{}
			}
			dst.Extra[k] = v
		}
	}
}

// Keywords that imply a type when a schema has none.
var (
	stringKeywords = []string{"pattern", "minLength", "maxLength", "format", "contentEncoding", "contentMediaType"}
	numberKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
	arrayKeywords  = []string{"minItems", "maxItems", "uniqueItems", "minContains", "maxContains"}
	objectKeywords = []string{"minProperties", "maxProperties", "dependentRequired"}
)

// infer is the type of the untyped s (at path): object for properties,
// required or additionalProperties, array for items, the type of its enum
// values; else the type its constraints apply to (a loss), else string (a
// loss: any value).
func (p *projector) infer(s *Schema, path *jpath) string {
	switch {
	case s.Properties != nil || s.Required != nil || s.AdditionalProperties != nil:
		return TypeObject
	case s.Items != nil:
		return TypeArray
	}
	if len(s.Enum) > 0 {
		if t := inferEnumType(map[string]any{"enum": s.Enum}); t != "" {
			return t
		}
	}
	for _, kw := range []struct {
		typ  string
		keys []string
	}{{TypeString, stringKeywords}, {TypeNumber, numberKeywords}, {TypeArray, arrayKeywords}, {TypeObject, objectKeywords}} {
		for _, k := range kw.keys {
			if _, ok := s.Extra[k]; ok {
				p.lose(path, "no type: projected as %s (from %q)", kw.typ, k)
				return kw.typ
			}
		}
	}
	p.lose(path, "no type (any value): projected as type string")
	return TypeString
}

// tidy makes the projected tree s (at its projected path) a valid
// OpenTool schema: members that do not apply to its type dropped, an
// object's properties present, an array's items present, enum values of
// the type, required names declared.
func (p *projector) tidy(s *Schema, path *jpath) {
	if s.Type != TypeObject {
		s.Properties, s.Required, s.AdditionalProperties = nil, nil, nil
	}
	if s.Type != TypeArray {
		s.Items = nil
	}
	switch s.Type {
	case TypeObject:
		if s.Properties == nil {
			s.Properties = map[string]*Schema{}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
			p.tidy(s.Properties[k], path.jsKey("properties").key(k))
		}
		var req []string
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; ok {
				req = append(req, r)
			} else {
				p.lose(path.jsKey("required"), "%q is not a declared property: left out", r)
			}
		}
		s.Required = req
		if s.Enum != nil {
			p.lose(path.jsKey("enum"), "not expressible for type object: left out")
			s.Enum = nil
		}
	case TypeArray:
		if s.Items == nil {
			p.lose(path.jsKey("items"), "absent (any items): projected as type string")
			s.Items = &Schema{Type: TypeString}
		}
		p.tidy(s.Items, path.jsKey("items"))
		if s.Enum != nil {
			p.lose(path.jsKey("enum"), "not expressible for type array: left out")
			s.Enum = nil
		}
	default:
		s.Enum = p.enum(s.Enum, s.Type, path.jsKey("enum"))
	}
}

// enum keeps the values of vals that have type typ (numbers as float64);
// nil when none (or none were given).
func (p *projector) enum(vals []any, typ string, ep *jpath) []any {
	if vals == nil {
		return nil
	}
	var out []any
	for i, v := range vals {
		v, ok := valueOfType(v, typ)
		if !ok {
			p.lose(ep.index(i), "value %s is not of type %s: left out", compactJSON(v), typ)
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		p.lose(ep, "no value of type %s: left out", typ)
		return nil
	}
	return out
}

// compactJSON is v as JSON, for messages.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return strconv.Quote(fmt.Sprint(v))
	}
	return string(b)
}
