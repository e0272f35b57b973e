package opentool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ErrUnsupportedSchema is wrapped by FromJSONSchema for JSON Schema
// constructs that an OpenTool Schema cannot express.
var ErrUnsupportedSchema = errors.New("opentool: unsupported JSON Schema")

// JSONSchema returns s as a JSON Schema (draft 2020-12) fragment, following
// spec 1.1.0 "Schema Object": "type", "description" (when not empty),
// "properties" (always for type object, {} when there are none), "items",
// "enum" and "required" (when not empty), and "additionalProperties" (a
// bool) when AdditionalProperties is set; then every keyword of Extra
// ("minimum", "format", ...), as written.
//
// The values are those json.Unmarshal makes (map[string]any, []any, string,
// bool and the enum values as they are; the numbers of Extra are
// json.Number, exactly as written), so the result can be marshalled or
// handed to a JSON Schema compiler. s should be inlined first (see
// OpenTool.ResolveSchema); a remaining "$ref" is copied as is. A nil s gives
// an empty map. An Extra value that is not valid JSON is left out.
func (s *Schema) JSONSchema() map[string]any {
	m := map[string]any{}
	if s == nil {
		return m
	}
	for _, k := range extraKeys(s.Extra) {
		if v, err := decodeJSON(s.Extra[k]); err == nil {
			m[k] = v
		}
	}
	if s.Ref != "" {
		m["$ref"] = s.Ref
	}
	if s.Type != "" {
		m["type"] = s.Type
	}
	if s.Description != "" {
		m["description"] = s.Description
	}
	if s.Type == TypeObject || len(s.Properties) > 0 {
		props := make(map[string]any, len(s.Properties))
		for k, p := range s.Properties {
			props[k] = p.JSONSchema()
		}
		m["properties"] = props
	}
	if s.Items != nil {
		m["items"] = s.Items.JSONSchema()
	}
	if len(s.Enum) > 0 {
		m["enum"] = cloneValues(s.Enum)
	}
	if len(s.Required) > 0 {
		req := make([]any, len(s.Required))
		for i, r := range s.Required {
			req[i] = r
		}
		m["required"] = req
	}
	if s.AdditionalProperties != nil {
		m["additionalProperties"] = *s.AdditionalProperties
	}
	return m
}

// ParametersJSONSchema returns the parameters of f as one JSON Schema
// object, the form OpenAI "parameters" and Anthropic "input_schema" take:
//
//	{"type": "object",
//	 "properties": {param.Name: param schema, with param.Description as its
//	                "description" when set},
//	 "required": [names of the required parameters, in order],
//	 "additionalProperties": false}
//
// "required" is always present ([] when no parameter is required).
// "additionalProperties" is f.AdditionalParameters, present only when that
// is set: false when the function refuses parameters it does not declare.
// Schemas are resolved through doc (which may be nil) as
// OpenTool.ResolveSchema does, so the result has no "$ref".
//
// Errors: those of Inline (*RefError wrapping ErrUnknownRef or ErrRefCycle,
// ErrTooLarge), and errors wrapping ErrInvalidDocument for a nil f, a
// parameter without schema and duplicate parameter names. Paths start at
// "functions[i]" when f is in doc, else at `function "name"`.
func ParametersJSONSchema(doc *OpenTool, f *Function) (map[string]any, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: nil function", ErrInvalidDocument)
	}
	prefix := (*jpath)(nil).field(fmt.Sprintf("function %q", f.Name))
	in := &inliner{}
	if doc != nil {
		in.schemas = doc.Schemas
		for i := range doc.Functions {
			if &doc.Functions[i] == f || doc.Functions[i].Name == f.Name {
				prefix = (*jpath)(nil).field("functions").index(i)
				break
			}
		}
	}
	props := make(map[string]any, len(f.Parameters))
	required := []any{}
	for i, p := range f.Parameters {
		path := prefix.field("parameters").index(i)
		if p.Schema == nil {
			return nil, fmt.Errorf("%w: %s.schema: required", ErrInvalidDocument, path)
		}
		if _, dup := props[p.Name]; dup {
			return nil, fmt.Errorf("%w: %s.name: duplicate parameter name %q", ErrInvalidDocument, path, p.Name)
		}
		s, err := in.schema(p.Schema, path.field("schema"))
		if err != nil {
			return nil, err
		}
		js := s.JSONSchema()
		if p.Description != "" {
			js["description"] = p.Description
		}
		props[p.Name] = js
		if p.Required {
			required = append(required, p.Name)
		}
	}
	out := map[string]any{"type": TypeObject, "properties": props, "required": required}
	if f.AdditionalParameters != nil {
		out["additionalProperties"] = *f.AdditionalParameters
	}
	return out, nil
}

// InputJSONSchema returns the JSON Schema (draft 2020-12) of the arguments
// object of f: f.InputSchema as declared when f has one (the schema the
// host checks arguments against and serves), else ParametersJSONSchema(doc,
// f), built from the parameters. Errors: those of ParametersJSONSchema,
// and an error wrapping ErrInvalidDocument when InputSchema is not a JSON
// object.
func InputJSONSchema(doc *OpenTool, f *Function) (map[string]any, error) {
	if f == nil || len(f.InputSchema) == 0 {
		return ParametersJSONSchema(doc, f)
	}
	return DecodeJSONSchema(f.InputSchema)
}

// OutputJSONSchema returns f.OutputSchema, the JSON Schema of the result
// object as declared, decoded; nil, nil when f declares none (the result is
// then described by f.Return, if at all). Errors wrap ErrInvalidDocument:
// OutputSchema is not a JSON object.
func OutputJSONSchema(f *Function) (map[string]any, error) {
	if f == nil || len(f.OutputSchema) == 0 {
		return nil, nil
	}
	return DecodeJSONSchema(f.OutputSchema)
}

// DecodeJSONSchema decodes a JSON Schema object written as raw JSON, its
// numbers as json.Number (exactly as written). Errors wrap
// ErrInvalidDocument: raw is not one JSON object.
func DecodeJSONSchema(raw json.RawMessage) (map[string]any, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: JSON Schema: %v", ErrInvalidDocument, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: JSON Schema: not a JSON object: %.40s", ErrInvalidDocument, raw)
	}
	return m, nil
}

// decodeJSON decodes one JSON value with numbers as json.Number.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// FromJSONSchema converts a JSON Schema fragment, as json.Unmarshal (with or
// without UseNumber) decodes it, e.g. the reflection output of
// github.com/invopop/jsonschema, into an OpenTool Schema (spec 1.1.0
// "Schema Object") that passes validation. It reads:
//
//   - "type": a string, or an array whose one non-"null" entry is taken
//     (["string", "null"] is "string"). When absent it is inferred from
//     properties (object), items (array) or the enum values.
//   - "description", "properties", "items", "enum" (null values dropped),
//     "const" (as a one-value enum) and "required".
//   - "additionalProperties" in its boolean form, on objects (a schema
//     there, e.g. the value schema of a map, is dropped: any member is
//     then allowed).
//   - "$ref" to a local JSON Pointer ("#/$defs/X", "#/definitions/X", "#"),
//     inlined; a "description" next to it replaces the target's.
//   - "anyOf"/"oneOf" with exactly one alternative that is not {"type":
//     "null"}: that alternative.
//
// ProjectJSONSchema is the lenient counterpart: it never refuses, keeps
// the constraints as extra keywords and lists what it loses.
//
// Annotations and constraints OpenTool cannot express ("$schema", "$id",
// "title", "format", "default", "minimum", "additionalProperties" on a
// type other than object, ...) are dropped; an object without properties
// gets an empty Properties map.
//
// Errors name the path of the construct (e.g. "properties.tags.items"):
// ErrUnsupportedSchema for boolean schemas, several types, tuple items,
// allOf, not, if/then/else and other shapes OpenTool cannot express, enum
// values that do not match the type, required names that are not
// properties; a *RefError wrapping ErrUnknownRef (non-local or missing
// target) or ErrRefCycle (recursive types); ErrTooLarge beyond
// MaxInlineSchemas.
func FromJSONSchema(js map[string]any) (*Schema, error) {
	c := &fromJSON{root: js}
	return c.schema(js, nil)
}

// unsupportedKeywords change the shape of the accepted values in ways an
// OpenTool Schema cannot express.
var unsupportedKeywords = []string{"allOf", "not", "if", "then", "else", "prefixItems", "dependentSchemas", "$dynamicRef", "$recursiveRef"}

// fromJSON converts one JSON Schema document.
type fromJSON struct {
	root  map[string]any
	stack []string // "$ref"s being expanded
	count int
}

func unsupported(p *jpath, format string, args ...any) error {
	return fmt.Errorf("%w at %s: %s", ErrUnsupportedSchema, p.orRoot(), fmt.Sprintf(format, args...))
}

func (c *fromJSON) schema(v any, path *jpath) (*Schema, error) {
	if c.count++; c.count > MaxInlineSchemas {
		return nil, fmt.Errorf("%w: more than %d schemas at %s", ErrTooLarge, MaxInlineSchemas, path.orRoot())
	}
	m, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool {
			return nil, unsupported(path, "boolean schema %v: OpenTool schemas need a type", b)
		}
		return nil, unsupported(path, "must be an object, got %T", v)
	}
	for _, k := range unsupportedKeywords {
		if _, ok := m[k]; ok {
			return nil, unsupported(path.jsKey(k), "keyword not supported")
		}
	}
	desc := ""
	if d, ok := m["description"]; ok && d != nil {
		if desc, ok = d.(string); !ok {
			return nil, unsupported(path.jsKey("description"), "must be a string, got %T", d)
		}
	}
	if ref, ok := m["$ref"]; ok {
		return c.ref(m, ref, path, desc)
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := m[k]; ok {
			return c.alternatives(m, k, alts, path, desc)
		}
	}

	typ, err := c.typeOf(m, path)
	if err != nil {
		return nil, err
	}
	s := &Schema{Type: typ, Description: desc}

	pp := path.jsKey("properties")
	if p, ok := m["properties"]; ok && p != nil {
		pm, ok := p.(map[string]any)
		switch {
		case typ != TypeObject:
			return nil, unsupported(pp, "only supported with type object, not %s", typ)
		case !ok:
			return nil, unsupported(pp, "must be an object, got %T", p)
		}
		keys := make([]string, 0, len(pm))
		for k := range pm {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		s.Properties = make(map[string]*Schema, len(pm))
		for _, k := range keys {
			if s.Properties[k], err = c.schema(pm[k], pp.key(k)); err != nil {
				return nil, err
			}
		}
	} else if typ == TypeObject {
		s.Properties = map[string]*Schema{}
	}

	ip := path.jsKey("items")
	if it, ok := m["items"]; ok && it != nil {
		switch it.(type) {
		case []any:
			return nil, unsupported(ip, "tuple items (an array of schemas) are not supported")
		}
		if typ != TypeArray {
			return nil, unsupported(ip, "only supported with type array, not %s", typ)
		}
		if s.Items, err = c.schema(it, ip); err != nil {
			return nil, err
		}
	} else if typ == TypeArray {
		return nil, unsupported(ip, "required: OpenTool arrays need an item schema")
	}

	if s.Enum, err = enumValues(m, path, typ); err != nil {
		return nil, err
	}
	if b, ok := m["additionalProperties"].(bool); ok && typ == TypeObject {
		s.AdditionalProperties = new(b)
	}

	rp := path.jsKey("required")
	if r, ok := m["required"]; ok && r != nil {
		names, ok := stringList(r)
		switch {
		case !ok:
			return nil, unsupported(rp, "must be an array of strings")
		case typ != TypeObject:
			if len(names) > 0 {
				return nil, unsupported(rp, "only supported with type object, not %s", typ)
			}
		}
		for i, n := range names {
			if _, ok := s.Properties[n]; !ok {
				return nil, unsupported(rp.index(i), "%q is not a declared property", n)
			}
		}
		if len(names) > 0 {
			s.Required = names
		}
	}
	return s, nil
}

// ref inlines the local reference of m (description desc).
func (c *fromJSON) ref(m map[string]any, ref any, path *jpath, desc string) (*Schema, error) {
	rp := path.jsKey("$ref")
	r, ok := ref.(string)
	if !ok {
		return nil, unsupported(rp, "must be a string, got %T", ref)
	}
	for _, k := range []string{"type", "properties", "items", "enum", "const", "anyOf", "oneOf"} {
		if _, ok := m[k]; ok {
			return nil, unsupported(path.jsKey(k), "not supported alongside $ref")
		}
	}
	target, targetPath, ok := c.pointer(r)
	if !ok {
		return nil, &RefError{Path: rp.String(), Ref: r, Err: ErrUnknownRef}
	}
	if i := slices.Index(c.stack, r); i >= 0 {
		return nil, &RefError{Path: rp.String(), Ref: r, Cycle: append(slices.Clone(c.stack[i:]), r), Err: ErrRefCycle}
	}
	c.stack = append(c.stack, r)
	s, err := c.schema(target, targetPath)
	c.stack = c.stack[:len(c.stack)-1]
	if err != nil {
		return nil, err
	}
	if desc != "" {
		s.Description = desc
	}
	return s, nil
}

// pointer resolves a local reference "#" or "#/a/b" (RFC 6901) against the
// root, returning the target and its path.
func (c *fromJSON) pointer(ref string) (any, *jpath, bool) {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, nil, false
	}
	var cur any = c.root
	var path *jpath
	if rest == "" {
		return cur, path, true
	}
	if rest[0] != '/' {
		return nil, nil, false
	}
	for _, tok := range strings.Split(rest[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch t := cur.(type) {
		case map[string]any:
			if cur, ok = t[tok]; !ok {
				return nil, nil, false
			}
			path = path.jsKey(tok)
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) || strconv.Itoa(i) != tok { // RFC 6901: no leading zeros or signs
				return nil, nil, false
			}
			cur, path = t[i], path.index(i)
		default:
			return nil, nil, false
		}
	}
	return cur, path, true
}

// alternatives handles anyOf/oneOf (keyword k) with one non-null branch.
func (c *fromJSON) alternatives(m map[string]any, k string, alts any, path *jpath, desc string) (*Schema, error) {
	kp := path.jsKey(k)
	arr, ok := alts.([]any)
	if !ok {
		return nil, unsupported(kp, "must be an array, got %T", alts)
	}
	for _, other := range []string{"type", "properties", "items", "enum", "const", "anyOf", "oneOf"} {
		if _, ok := m[other]; ok && other != k {
			return nil, unsupported(path.jsKey(other), "not supported alongside %s", k)
		}
	}
	keep := -1
	for i, a := range arr {
		if isNullSchema(a) {
			continue
		}
		if keep >= 0 {
			return nil, unsupported(kp, "more than one non-null alternative")
		}
		keep = i
	}
	if keep < 0 {
		return nil, unsupported(kp, "no non-null alternative")
	}
	s, err := c.schema(arr[keep], kp.index(keep))
	if err != nil {
		return nil, err
	}
	if desc != "" {
		s.Description = desc
	}
	return s, nil
}

// isNullSchema reports whether a is {"type": "null"} (or ["null"]).
func isNullSchema(a any) bool {
	m, ok := a.(map[string]any)
	if !ok {
		return false
	}
	types, ok := stringList(m["type"])
	return ok && len(types) == 1 && types[0] == "null"
}

// typeOf returns the one non-null type of m, inferring a missing one.
func (c *fromJSON) typeOf(m map[string]any, path *jpath) (string, error) {
	tp := path.jsKey("type")
	t, ok := m["type"]
	if !ok || t == nil {
		if _, ok := m["properties"]; ok {
			return TypeObject, nil
		}
		if _, ok := m["items"]; ok {
			return TypeArray, nil
		}
		if typ := inferEnumType(m); typ != "" {
			return typ, nil
		}
		return "", unsupported(tp, "missing: OpenTool schemas need a type")
	}
	types, ok := stringList(t)
	if !ok {
		return "", unsupported(tp, "must be a string or an array of strings")
	}
	var nonNull []string
	for _, ty := range types {
		if ty != "null" {
			nonNull = append(nonNull, ty)
		}
	}
	switch len(nonNull) {
	case 0:
		return "", unsupported(tp, "type null is not supported")
	case 1:
	default:
		return "", unsupported(tp, "several types %q are not supported", nonNull)
	}
	switch nonNull[0] {
	case TypeBoolean, TypeInteger, TypeNumber, TypeString, TypeArray, TypeObject:
		return nonNull[0], nil
	}
	return "", unsupported(tp, "unknown type %q", nonNull[0])
}

// rawEnum returns the enum (or const) values of m, without nulls, and the
// keyword they came from.
func rawEnum(m map[string]any) ([]any, string, bool) {
	var vals []any
	key := "enum"
	if e, ok := m["enum"]; ok && e != nil {
		switch t := e.(type) {
		case []any:
			vals = t
		case []string:
			for _, s := range t {
				vals = append(vals, s)
			}
		default:
			return nil, key, false
		}
	} else if cv, ok := m["const"]; ok {
		vals, key = []any{cv}, "const"
	} else {
		return nil, key, true
	}
	return vals, key, true
}

// inferEnumType returns the type all enum/const values share, or "".
func inferEnumType(m map[string]any) string {
	vals, _, ok := rawEnum(m)
	typ := ""
	for _, v := range vals {
		t := ""
		switch v.(type) {
		case nil:
			continue
		case string:
			t = TypeString
		case bool:
			t = TypeBoolean
		default:
			f, ok := toFloat(v)
			if !ok {
				return ""
			}
			t = TypeNumber
			if f == math.Trunc(f) {
				t = TypeInteger
			}
		}
		switch {
		case typ == "" || typ == t:
			typ = t
		case typ == TypeInteger && t == TypeNumber || typ == TypeNumber && t == TypeInteger:
			typ = TypeNumber
		default:
			return ""
		}
	}
	if !ok {
		return ""
	}
	return typ
}

// enumValues converts the enum (or const) of m, checking each against typ.
func enumValues(m map[string]any, path *jpath, typ string) ([]any, error) {
	vals, key, ok := rawEnum(m)
	ep := path.jsKey(key)
	if !ok {
		return nil, unsupported(ep, "must be an array")
	}
	if len(vals) == 0 {
		return nil, nil
	}
	if typ == TypeArray || typ == TypeObject {
		return nil, unsupported(ep, "not supported for type %s", typ)
	}
	var out []any
	for i, v := range vals {
		vp := ep
		if key == "enum" {
			vp = ep.index(i)
		}
		if v == nil {
			continue
		}
		v, ok := valueOfType(v, typ)
		if !ok {
			return nil, unsupported(vp, "value %v does not match type %s", v, typ)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, unsupported(ep, "no value other than null")
	}
	return out, nil
}

// toFloat returns a finite JSON number of any Go numeric type as float64.
func toFloat(v any) (float64, bool) {
	var f float64
	switch t := v.(type) {
	case float64:
		f = t
	case float32:
		f = float64(t)
	case int:
		f = float64(t)
	case int8:
		f = float64(t)
	case int16:
		f = float64(t)
	case int32:
		f = float64(t)
	case int64:
		f = float64(t)
	case uint:
		f = float64(t)
	case uint8:
		f = float64(t)
	case uint16:
		f = float64(t)
	case uint32:
		f = float64(t)
	case uint64:
		f = float64(t)
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(t), 64); err != nil {
			return 0, false
		}
	default:
		return 0, false
	}
	return f, !math.IsInf(f, 0) && !math.IsNaN(f)
}

// stringList returns v as strings when it is a string, []string or an []any
// of strings.
func stringList(v any) ([]string, bool) {
	switch t := v.(type) {
	case string:
		return []string{t}, true
	case []string:
		return slices.Clone(t), true
	case []any:
		out := make([]string, len(t))
		for i, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// valueOfType is enum value v as a value of OpenTool type typ (a JSON
// number as float64) and whether it is one: a string for string, a
// boolean for boolean, a number for number, a whole number for integer.
func valueOfType(v any, typ string) (any, bool) {
	switch typ {
	case TypeString:
		_, ok := v.(string)
		return v, ok
	case TypeBoolean:
		_, ok := v.(bool)
		return v, ok
	case TypeNumber, TypeInteger:
		if f, ok := toFloat(v); ok && (typ == TypeNumber || f == math.Trunc(f)) {
			return f, true
		}
	}
	return v, false
}
