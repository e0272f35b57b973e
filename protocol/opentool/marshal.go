package opentool

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// These MarshalJSON methods make encoding/json write the fields the spec
// requires even when the Go value leaves them empty, so that a document built
// in Go encodes to a valid one and Parse -> json.Marshal -> Parse is exact.
// They use value receivers: *T and T encode the same way. (A struct that
// embeds one of these types inherits its MarshalJSON; name the field.)

// MarshalJSON encodes d with "functions": [] when Functions is nil (spec
// 1.1.0 "OpenTool Object": functions is required).
func (d OpenTool) MarshalJSON() ([]byte, error) {
	type plain OpenTool
	p := plain(d)
	if p.Functions == nil {
		p.Functions = []Function{}
	}
	return json.Marshal(p)
}

// MarshalJSON encodes f with "parameters": [] when Parameters is nil (spec
// 1.1.0 "Function Object": parameters is required).
func (f Function) MarshalJSON() ([]byte, error) {
	type plain Function
	p := plain(f)
	if p.Parameters == nil {
		p.Parameters = []Parameter{}
	}
	return json.Marshal(p)
}

// MarshalJSON encodes s as its JSON tags say, except that an object schema
// (type object, no "$ref") always has "properties", {} when it has none
// (spec 1.1.0 "Schema Object": properties is required when type is object;
// the omitempty tag would drop an empty map), followed by the members of
// Extra in name order (those naming a field, and empty values, are left out).
//
// It writes the whole subtree itself: encoding/json re-checks the output of
// every MarshalJSON call, which for nested calls would cost time quadratic
// in the nesting depth.
func (s Schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := s.encode(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// encode writes s like encoding/json would with the field tags (same
// order, omitempty, sorted property names), plus the rule above.
func (s *Schema) encode(b *bytes.Buffer) error {
	b.WriteByte('{')
	n := 0
	next := func(name string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(name)
	}
	str := func(name, v string) error {
		if v == "" {
			return nil
		}
		next(name)
		return writeJSON(b, v)
	}
	if err := str(`"$ref":`, s.Ref); err != nil {
		return err
	}
	if err := str(`"type":`, s.Type); err != nil {
		return err
	}
	if err := str(`"description":`, s.Description); err != nil {
		return err
	}
	if len(s.Properties) > 0 || s.Ref == "" && s.Type == TypeObject {
		next(`"properties":`)
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := s.Properties[k].encodeOrNull(b); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	}
	if s.Items != nil {
		next(`"items":`)
		if err := s.Items.encode(b); err != nil {
			return err
		}
	}
	if len(s.Enum) > 0 {
		next(`"enum":`)
		if err := writeJSON(b, s.Enum); err != nil {
			return err
		}
	}
	if len(s.Required) > 0 {
		next(`"required":`)
		if err := writeJSON(b, s.Required); err != nil {
			return err
		}
	}
	if s.AdditionalProperties != nil {
		next(`"additionalProperties":`)
		b.WriteString(strconv.FormatBool(*s.AdditionalProperties))
	}
	for _, k := range extraKeys(s.Extra) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		if err := writeJSON(b, k); err != nil {
			return err
		}
		b.WriteByte(':')
		if err := writeJSON(b, s.Extra[k]); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// schemaFields are the JSON names of the fields of Schema: Extra never
// writes them.
var schemaFields = map[string]bool{
	"$ref": true, "type": true, "description": true, "properties": true, "items": true,
	"enum": true, "required": true, "additionalProperties": true,
}

// extraKeys returns the keys of extra that name no Schema field and have
// a value, sorted.
func extraKeys(extra map[string]json.RawMessage) []string {
	if len(extra) == 0 {
		return nil
	}
	keys := make([]string, 0, len(extra))
	for k, v := range extra {
		if !schemaFields[k] && len(v) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func (s *Schema) encodeOrNull(b *bytes.Buffer) error {
	if s == nil {
		b.WriteString("null")
		return nil
	}
	return s.encode(b)
}

// writeJSON appends the encoding/json encoding of v.
func writeJSON(b *bytes.Buffer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b.Write(data)
	return nil
}
