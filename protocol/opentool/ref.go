package opentool

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

var (
	// ErrUnknownRef is wrapped (through *RefError) when a "$ref" is not of
	// the form "#/schemas/Name" or names no schema.
	ErrUnknownRef = errors.New("opentool: unknown schema reference")
	// ErrRefCycle is wrapped (through *RefError) when following "$ref"s
	// leads back to a schema being expanded, which cannot be inlined.
	ErrRefCycle = errors.New("opentool: schema reference cycle")
	// ErrTooLarge is wrapped when inlining would build more than
	// MaxInlineSchemas schemas (references can expand exponentially).
	ErrTooLarge = errors.New("opentool: inlined schema too large")
)

// MaxInlineSchemas bounds the number of Schema values one Inline,
// ResolveSchema, ParametersJSONSchema or FromJSONSchema call builds, so that
// a small hostile document cannot expand into an exponential tree.
const MaxInlineSchemas = 100000

// RefError is the error of a "$ref" that cannot be resolved or inlined.
// errors.Is matches its Err (ErrUnknownRef or ErrRefCycle).
type RefError struct {
	// Path is the JSON path of the "$ref" field, where it is written:
	// "functions[2].parameters[0].schema.$ref" or "schemas.A.items.$ref".
	Path string
	// Ref is the "$ref" value.
	Ref string
	// Cycle lists, for ErrRefCycle, the schema names on the cycle with the
	// first repeated at the end: ["A", "B", "A"].
	Cycle []string
	// Err is ErrUnknownRef or ErrRefCycle.
	Err error
}

// Error returns e.g. "opentool: schemas.B.$ref: schema reference cycle A ->
// B -> A" or `opentool: functions[0].return.schema.$ref: unknown schema
// reference "#/schemas/X"`.
func (e *RefError) Error() string {
	path := e.Path
	if path == "" {
		path = rootPath
	}
	what := "invalid schema reference"
	if e.Err != nil {
		what = strings.TrimPrefix(e.Err.Error(), "opentool: ")
	}
	if len(e.Cycle) > 0 {
		return fmt.Sprintf("opentool: %s: %s %s", path, what, strings.Join(e.Cycle, " -> "))
	}
	return fmt.Sprintf("opentool: %s: %s %q", path, what, e.Ref)
}

// Unwrap returns Err.
func (e *RefError) Unwrap() error { return e.Err }

// RefName returns the schema name of a "$ref" of the form "#/schemas/Name"
// (spec 1.1.0 "OpenTool Object", schemas), decoding the JSON Pointer escapes
// "~1" ("/") and "~0" ("~"). ok is false for any other form, including an
// empty name and a pointer deeper than one level.
func RefName(ref string) (name string, ok bool) {
	name, ok = strings.CutPrefix(ref, RefPrefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", false
	}
	if strings.Contains(name, "~") {
		var b strings.Builder
		for i := 0; i < len(name); i++ {
			if name[i] != '~' {
				b.WriteByte(name[i])
				continue
			}
			if i+1 == len(name) || name[i+1] != '0' && name[i+1] != '1' {
				return "", false
			}
			b.WriteByte("~/"[name[i+1]-'0'])
			i++
		}
		name = b.String()
	}
	return name, true
}

// Ref returns the "$ref" that points at the schema name: RefPrefix + name,
// with "~" and "/" escaped as JSON Pointer requires.
func Ref(name string) string {
	return RefPrefix + strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// Inline returns a deep copy of d in which every "$ref" in function
// parameters, returns and stream data (at any depth of properties and items)
// is replaced by a deep copy of the named entry of d.Schemas, recursively. A
// description written next to a "$ref" replaces the target's description,
// and so does each extra keyword (Schema.Extra) written next to it.
// The Schemas map is kept, as a deep copy with its own "$ref"s untouched.
//
// Errors: a *RefError wrapping ErrUnknownRef (bad form or unknown name) or
// ErrRefCycle, with the path of the "$ref" (inside schemas when the bad
// reference is there); an error wrapping ErrTooLarge beyond
// MaxInlineSchemas. Inline of a nil d is nil, nil.
func (d *OpenTool) Inline() (*OpenTool, error) {
	if d == nil {
		return nil, nil
	}
	out := d.Clone()
	in := &inliner{schemas: d.Schemas}
	for i := range out.Functions {
		fn := &out.Functions[i]
		path := (*jpath)(nil).field("functions").index(i)
		var err error
		for j := range fn.Parameters {
			p := &fn.Parameters[j]
			if p.Schema, err = in.schema(p.Schema, path.field("parameters").index(j).field("schema")); err != nil {
				return nil, err
			}
		}
		if fn.Return != nil {
			if fn.Return.Schema, err = in.schema(fn.Return.Schema, path.field("return").field("schema")); err != nil {
				return nil, err
			}
		}
		if fn.Stream != nil && fn.Stream.Data != nil {
			if fn.Stream.Data.Schema, err = in.schema(fn.Stream.Data.Schema, path.field("stream").field("data").field("schema")); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// ResolveSchema returns a deep copy of s with every "$ref" (at any depth)
// replaced by a deep copy of the named entry of d.Schemas, as Inline does
// for one schema. s is not changed; a nil s gives nil, nil. d may be nil
// (then every "$ref" is unknown).
//
// Errors are those of Inline; paths inside s are relative to s ("$ref",
// "properties.id.$ref").
func (d *OpenTool) ResolveSchema(s *Schema) (*Schema, error) {
	in := &inliner{}
	if d != nil {
		in.schemas = d.Schemas
	}
	return in.schema(s, nil)
}

// inliner expands the "$ref"s of schemas against a Schemas map.
type inliner struct {
	schemas map[string]*Schema
	stack   []string // names being expanded, outermost first
	count   int
}

// schema returns an expanded deep copy of s found at path.
func (in *inliner) schema(s *Schema, path *jpath) (*Schema, error) {
	if s == nil {
		return nil, nil
	}
	if in.count++; in.count > MaxInlineSchemas {
		return nil, fmt.Errorf("%w: more than %d schemas at %s", ErrTooLarge, MaxInlineSchemas, path.orRoot())
	}
	if s.Ref != "" {
		refPath := path.field("$ref").String()
		name, ok := RefName(s.Ref)
		target := in.schemas[name]
		if !ok || target == nil {
			return nil, &RefError{Path: refPath, Ref: s.Ref, Err: ErrUnknownRef}
		}
		if i := slices.Index(in.stack, name); i >= 0 {
			cycle := append(slices.Clone(in.stack[i:]), name)
			return nil, &RefError{Path: refPath, Ref: s.Ref, Cycle: cycle, Err: ErrRefCycle}
		}
		in.stack = append(in.stack, name)
		out, err := in.schema(target, (*jpath)(nil).field("schemas").key(name))
		in.stack = in.stack[:len(in.stack)-1]
		if err != nil {
			return nil, err
		}
		if s.Description != "" {
			out.Description = s.Description
		}
		for k, v := range s.Extra {
			if out.Extra == nil {
				out.Extra = map[string]json.RawMessage{}
			}
			out.Extra[k] = cloneRaw(v)
		}
		return out, nil
	}
	out := &Schema{
		Type:                 s.Type,
		Description:          s.Description,
		Enum:                 cloneValues(s.Enum),
		Required:             slices.Clone(s.Required),
		AdditionalProperties: cloneBool(s.AdditionalProperties),
		Extra:                cloneExtra(s.Extra),
	}
	if s.Properties != nil {
		out.Properties = make(map[string]*Schema, len(s.Properties))
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys) // deterministic errors
		for _, k := range keys {
			p, err := in.schema(s.Properties[k], path.field("properties").key(k))
			if err != nil {
				return nil, err
			}
			out.Properties[k] = p
		}
	}
	var err error
	if out.Items, err = in.schema(s.Items, path.field("items")); err != nil {
		return nil, err
	}
	return out, nil
}
