package export

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Limits of OpenAI strict mode (Structured Outputs, "Supported schemas"),
// checked by the strict rewrite.
const (
	// MaxStrictDepth is the deepest nesting of objects strict mode takes
	// (the parameters object is level 1).
	MaxStrictDepth = 10
	// MaxStrictProperties is the most object properties one schema may
	// have in total.
	MaxStrictProperties = 5000
	// MaxStrictEnumValues is the most enum values one schema may have in
	// total.
	MaxStrictEnumValues = 1000
)

// strictKeywords are the JSON Schema keywords OpenAI strict mode takes
// ("Supported schemas": types, anyOf, $defs/$ref, and the string, number
// and array constraints it lists). The strict rewrite drops every other
// keyword that constrains or annotates one value ("default", "title",
// "minLength", "uniqueItems", "examples", "$schema", ...): the host still
// checks the arguments against the schema as declared.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "const": true, "anyOf": true, "$ref": true, "$defs": true, "definitions": true, "description": true,
	"pattern": true, "format": true,
	"multipleOf": true, "maximum": true, "exclusiveMaximum": true, "minimum": true, "exclusiveMinimum": true,
	"minItems": true, "maxItems": true,
}

// strictFormats are the string formats strict mode takes; another
// "format" is dropped.
var strictFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

// strictRefused are keywords whose meaning strict mode cannot carry and
// that cannot be dropped without changing what a model may send in ways
// the schema exists to prevent: a function using them is exported
// non-strict.
var strictRefused = []string{
	"allOf", "not", "if", "then", "else", "dependentSchemas", "dependentRequired",
	"patternProperties", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
	"prefixItems", "contains", "$dynamicRef", "$recursiveRef",
}

// makeStrict rewrites params, the JSON Schema of f's arguments (as
// declared, or built from its parameters), for OpenAI strict mode:
//
//   - every object gets "additionalProperties": false;
//   - every property is listed in "required" (the parameters in f's
//     order; nested members: the required ones as declared, then the
//     others by name);
//   - a property that was optional becomes nullable: "type": "string"
//     turns into ["string", "null"], null joins its "enum", and a
//     "$ref" or "anyOf" gains a {"type": "null"} branch;
//   - "oneOf" becomes "anyOf";
//   - keywords strict mode does not take ("default", "minLength", a
//     "format" outside its list, ...) are dropped (strictKeywords).
//
// It returns "" on success, else why f cannot be strict (naming the
// parameter path); params may then be partly rewritten. Not supported:
// objects below the parameters object without declared properties that
// allow any members (free-form objects, "additionalProperties" a schema;
// one with "additionalProperties": false is the empty object, which is
// fine), arrays without an item schema, schemas without a type (other
// than "$ref", "anyOf", "enum" and "const" ones), boolean schemas, the
// keywords of strictRefused, a "$ref" that is not a JSON Pointer into the
// schema ("#", "#/$defs/X"), a root that is not an object, and schemas
// beyond MaxStrictDepth, MaxStrictProperties or MaxStrictEnumValues.
func makeStrict(params map[string]any, f *opentool.Function) string {
	if params["type"] != opentool.TypeObject {
		return fmt.Sprintf("the parameters object has type %v; strict mode needs an object", params["type"])
	}
	order := make([]string, len(f.Parameters))
	for i, p := range f.Parameters {
		order[i] = p.Name
	}
	w := &strictWalk{}
	if reason := w.schema(params, "", 0, order); reason != "" {
		return reason
	}
	for _, k := range []string{"$defs", "definitions"} {
		defs, _ := params[k].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			d, ok := defs[name].(map[string]any)
			if !ok {
				return fmt.Sprintf("%s.%s is not a schema object", k, name)
			}
			if reason := w.schema(d, k+"."+name, 0, nil); reason != "" {
				return reason
			}
		}
	}
	return ""
}

// strictWalk counts what the strict-mode limits bound.
type strictWalk struct {
	props, enums int
}

// schema rewrites s (at parameter path path, inside depth objects). order
// is the preferred order of the required list of the parameters object.
func (w *strictWalk) schema(s map[string]any, path string, depth int, order []string) string {
	for _, k := range strictRefused {
		if _, ok := s[k]; ok {
			return fmt.Sprintf("%s uses %q, which strict mode does not support", describe(path), k)
		}
	}
	if ref, ok := s["$ref"]; ok {
		r, _ := ref.(string)
		if r != "#" && !strings.HasPrefix(r, "#/$defs/") && !strings.HasPrefix(r, "#/definitions/") {
			return fmt.Sprintf("%s has a $ref strict mode cannot follow (%v)", describe(path), ref)
		}
	}
	if one, ok := s["oneOf"]; ok {
		if _, both := s["anyOf"]; both {
			return fmt.Sprintf("%s has both anyOf and oneOf", describe(path))
		}
		s["anyOf"] = one
		delete(s, "oneOf")
	}
	for k, v := range s {
		switch {
		case k == "format":
			if f, _ := v.(string); !strictFormats[f] {
				delete(s, k)
			}
		case !strictKeywords[k]:
			delete(s, k)
		}
	}
	if alts, ok := s["anyOf"]; ok {
		arr, ok := alts.([]any)
		if !ok {
			return fmt.Sprintf("%s has an anyOf that is not an array", describe(path))
		}
		if path == "" {
			return "the parameters object is an anyOf; strict mode needs an object"
		}
		for i, a := range arr {
			am, ok := a.(map[string]any)
			if !ok {
				return fmt.Sprintf("%s has a boolean schema in anyOf", describe(path))
			}
			if reason := w.schema(am, path+"|"+strconv.Itoa(i), depth, nil); reason != "" {
				return reason
			}
		}
	}
	types, ok := typesOf(s["type"])
	if !ok {
		return fmt.Sprintf("%s has no supported type (%v)", describe(path), s["type"])
	}
	if len(types) == 0 {
		_, ref := s["$ref"]
		_, anyOf := s["anyOf"]
		_, enum := s["enum"]
		_, cnst := s["const"]
		if !ref && !anyOf && !enum && !cnst {
			return fmt.Sprintf("%s has no type (any value); strict mode needs one", describe(path))
		}
	}
	if slices.Contains(types, opentool.TypeObject) {
		if reason := w.object(s, path, depth, order); reason != "" {
			return reason
		}
	}
	if slices.Contains(types, opentool.TypeArray) {
		items, ok := s["items"].(map[string]any)
		if !ok {
			return fmt.Sprintf("%s is an array without an item schema", describe(path))
		}
		if reason := w.schema(items, path+"[]", depth, nil); reason != "" {
			return reason
		}
	}
	if enum, ok := s["enum"].([]any); ok {
		if w.enums += len(enum); w.enums > MaxStrictEnumValues {
			return fmt.Sprintf("the parameters have more than %d enum values in all; strict mode allows %d", MaxStrictEnumValues, MaxStrictEnumValues)
		}
	}
	return ""
}

// object rewrites the object schema s (see schema).
func (w *strictWalk) object(s map[string]any, path string, depth int, order []string) string {
	depth++
	if depth > MaxStrictDepth {
		return fmt.Sprintf("%s nests objects %d levels deep; strict mode allows %d", describe(path), depth, MaxStrictDepth)
	}
	props, _ := s["properties"].(map[string]any)
	switch ap := s["additionalProperties"]; {
	case ap == nil || ap == true:
		if len(props) == 0 && path != "" {
			return fmt.Sprintf("%s is an object without declared properties (any members); strict mode needs every member declared", describe(path))
		}
	case ap != false:
		return fmt.Sprintf("%s is an object whose other members have a schema (additionalProperties); strict mode needs every member declared", describe(path))
	}
	if w.props += len(props); w.props > MaxStrictProperties {
		return fmt.Sprintf("the parameters have more than %d properties in all; strict mode allows %d", MaxStrictProperties, MaxStrictProperties)
	}
	required := map[string]bool{}
	var names []string
	for _, r := range stringsOf(s["required"]) {
		if _, ok := props[r]; ok && !required[r] {
			required[r] = true
			names = append(names, r)
		}
	}
	if order != nil {
		names = slices.DeleteFunc(slices.Clone(order), func(n string) bool { _, ok := props[n]; return !ok })
	}
	rest := make([]string, 0, len(props))
	for n := range props {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	for _, n := range names {
		ps, ok := props[n].(map[string]any)
		if !ok {
			return fmt.Sprintf("%s has no schema object", describe(join(path, n)))
		}
		if reason := w.schema(ps, join(path, n), depth, nil); reason != "" {
			return reason
		}
		if !required[n] {
			nullable(ps)
		}
	}
	all := make([]any, len(names))
	for i, n := range names {
		all[i] = n
	}
	s["required"] = all
	s["additionalProperties"] = false
	return ""
}

// typesOf returns the types of a "type" value (none when absent); ok is
// false for a type strict mode does not know.
func typesOf(t any) ([]string, bool) {
	var types []string
	switch v := t.(type) {
	case nil:
		return nil, true
	case string:
		types = []string{v}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			types = append(types, s)
		}
	case []string:
		types = v
	default:
		return nil, false
	}
	for _, ty := range types {
		switch ty {
		case opentool.TypeString, opentool.TypeNumber, opentool.TypeInteger, opentool.TypeBoolean, opentool.TypeObject, opentool.TypeArray, "null":
		default:
			return nil, false
		}
	}
	return types, true
}

// nullable lets s also be null: "null" joins its type, null its enum (a
// "const" becomes a two-value enum), a {"type":"null"} branch its anyOf;
// a "$ref" becomes an anyOf of the reference and {"type":"null"}.
func nullable(s map[string]any) {
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(t, "null")
		}
	}
	if c, ok := s["const"]; ok && s["enum"] == nil {
		delete(s, "const")
		s["enum"] = []any{c}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, nil) {
		s["enum"] = append(enum, nil)
	}
	null := map[string]any{"type": "null"}
	if ref, ok := s["$ref"]; ok {
		delete(s, "$ref")
		s["anyOf"] = []any{map[string]any{"$ref": ref}, null}
		return
	}
	if alts, ok := s["anyOf"].([]any); ok && s["type"] == nil {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && m["type"] == "null" {
				return
			}
		}
		s["anyOf"] = append(alts, null)
	}
}

// stringsOf returns the strings of a "required" value ([]any or []string).
func stringsOf(v any) []string {
	switch t := v.(type) {
	case []string:
		return t
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// join appends member name to a parameter path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe names a parameter path in a reason.
func describe(path string) string {
	if path == "" {
		return "the parameters object"
	}
	return "parameter " + strconv.Quote(path)
}
