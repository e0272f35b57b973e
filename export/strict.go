package export

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/opentool-host/opentool-host/opentool"
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

// makeStrict rewrites params, the parameters of f as one JSON Schema
// object, for OpenAI strict mode:
//
//   - every object gets "additionalProperties": false;
//   - every property is listed in "required" (the parameters in f's
//     order; nested members: the required ones as declared, then the
//     others by name);
//   - a property that was optional becomes nullable: "type": "string"
//     turns into ["string", "null"], and null joins its "enum".
//
// It returns "" on success, else why f cannot be strict (naming the
// parameter path); params may then be partly rewritten. Not supported:
// objects below the parameters object without declared properties that
// allow any members (free-form objects; one with "additionalProperties":
// false is the empty object, which is fine), arrays without an item
// schema, schemas without a type, and schemas beyond MaxStrictDepth,
// MaxStrictProperties or MaxStrictEnumValues.
func makeStrict(params map[string]any, f *opentool.Function) string {
	order := make([]string, len(f.Parameters))
	for i, p := range f.Parameters {
		order[i] = p.Name
	}
	w := &strictWalk{}
	return w.schema(params, "", 0, order)
}

// strictWalk counts what the strict-mode limits bound.
type strictWalk struct {
	props, enums int
}

// schema rewrites s (at parameter path path, inside depth objects). order
// is the preferred order of the required list of the parameters object.
func (w *strictWalk) schema(s map[string]any, path string, depth int, order []string) string {
	if _, ok := s["$ref"]; ok {
		return fmt.Sprintf("%s is an unresolved $ref", describe(path))
	}
	typ, _ := s["type"].(string)
	switch typ {
	case opentool.TypeObject:
		depth++
		if depth > MaxStrictDepth {
			return fmt.Sprintf("%s nests objects %d levels deep; strict mode allows %d", describe(path), depth, MaxStrictDepth)
		}
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 && path != "" && s["additionalProperties"] != false {
			return fmt.Sprintf("%s is an object without declared properties (any members); strict mode needs every member declared", describe(path))
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
				return fmt.Sprintf("%s has no schema", describe(join(path, n)))
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
	case opentool.TypeArray:
		items, ok := s["items"].(map[string]any)
		if !ok {
			return fmt.Sprintf("%s is an array without an item schema", describe(path))
		}
		if reason := w.schema(items, path+"[]", depth, nil); reason != "" {
			return reason
		}
	case opentool.TypeString, opentool.TypeNumber, opentool.TypeInteger, opentool.TypeBoolean:
	default:
		return fmt.Sprintf("%s has no supported type (%v)", describe(path), s["type"])
	}
	if enum, ok := s["enum"].([]any); ok {
		if w.enums += len(enum); w.enums > MaxStrictEnumValues {
			return fmt.Sprintf("the parameters have more than %d enum values in all; strict mode allows %d", MaxStrictEnumValues, MaxStrictEnumValues)
		}
	}
	return ""
}

// nullable lets s also be null: its type becomes [type, "null"] and null
// joins its enum.
func nullable(s map[string]any) {
	if t, ok := s["type"].(string); ok {
		s["type"] = []any{t, "null"}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, nil) {
		s["enum"] = append(enum, nil)
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
