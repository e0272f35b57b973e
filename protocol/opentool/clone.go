package opentool

import (
	"encoding/json"
	"maps"
	"slices"
)

// Clone returns a deep copy of d sharing no memory with it (nil for nil).
// Enum values are copied deeply too.
func (d *OpenTool) Clone() *OpenTool {
	if d == nil {
		return nil
	}
	out := &OpenTool{OpenTool: d.OpenTool, Info: d.Info}
	if d.Server != nil {
		s := *d.Server
		out.Server = &s
	}
	if d.Functions != nil {
		out.Functions = make([]Function, len(d.Functions))
		for i := range d.Functions {
			out.Functions[i] = *d.Functions[i].Clone()
		}
	}
	out.Schemas = cloneSchemaMap(d.Schemas)
	out.Refused = slices.Clone(d.Refused)
	return out
}

// Clone returns a deep copy of f (nil for nil).
func (f *Function) Clone() *Function {
	if f == nil {
		return nil
	}
	out := &Function{Name: f.Name, Description: f.Description, AdditionalParameters: cloneBool(f.AdditionalParameters)}
	if f.Parameters != nil {
		out.Parameters = make([]Parameter, len(f.Parameters))
		for i, p := range f.Parameters {
			p.Schema = p.Schema.Clone()
			out.Parameters[i] = p
		}
	}
	out.Return = f.Return.Clone()
	if f.Stream != nil {
		out.Stream = &Stream{Data: f.Stream.Data.Clone()}
	}
	out.InputSchema = cloneRaw(f.InputSchema)
	out.OutputSchema = cloneRaw(f.OutputSchema)
	out.Title = f.Title
	if f.Annotations != nil {
		a := *f.Annotations
		a.ReadOnlyHint, a.DestructiveHint = cloneBool(a.ReadOnlyHint), cloneBool(a.DestructiveHint)
		a.IdempotentHint, a.OpenWorldHint = cloneBool(a.IdempotentHint), cloneBool(a.OpenWorldHint)
		out.Annotations = &a
	}
	if f.Icons != nil {
		out.Icons = make([]Icon, len(f.Icons))
		for i, ic := range f.Icons {
			ic.Sizes = slices.Clone(ic.Sizes)
			out.Icons[i] = ic
		}
	}
	out.Meta = cloneRaw(f.Meta)
	out.MCPTool = cloneRaw(f.MCPTool)
	if f.Execution != nil {
		ex := *f.Execution
		out.Execution = &ex
	}
	return out
}

// cloneRaw returns a copy of raw JSON (nil for nil).
func cloneRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return slices.Clone(r)
}

// cloneExtra returns a deep copy of a Schema's Extra (nil for nil).
func cloneExtra(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = cloneRaw(v)
	}
	return out
}

// Clone returns a deep copy of r (nil for nil).
func (r *Return) Clone() *Return {
	if r == nil {
		return nil
	}
	out := *r
	out.Schema = r.Schema.Clone()
	return &out
}

// Clone returns a deep copy of s (nil for nil); "$ref"s are copied, not
// resolved (see OpenTool.ResolveSchema).
func (s *Schema) Clone() *Schema {
	if s == nil {
		return nil
	}
	out := *s
	out.Properties = cloneSchemaMap(s.Properties)
	out.Items = s.Items.Clone()
	out.Enum = cloneValues(s.Enum)
	if s.Required != nil {
		out.Required = append([]string{}, s.Required...)
	}
	out.AdditionalProperties = cloneBool(s.AdditionalProperties)
	out.Extra = cloneExtra(s.Extra)
	return &out
}

// cloneBool returns a pointer to a copy of *b (nil for nil).
func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	return new(*b)
}

func cloneSchemaMap(m map[string]*Schema) map[string]*Schema {
	if m == nil {
		return nil
	}
	out := make(map[string]*Schema, len(m))
	for k, v := range m {
		out[k] = v.Clone()
	}
	return out
}

// cloneValues deep-copies enum values (the []any and map[string]any that
// json.Unmarshal makes are copied; other values are copied by assignment).
func cloneValues(vs []any) []any {
	if vs == nil {
		return nil
	}
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case []any:
		return cloneValues(t)
	case map[string]any:
		m := maps.Clone(t)
		for k, e := range m {
			m[k] = cloneValue(e)
		}
		return m
	}
	return v
}
