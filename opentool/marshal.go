package opentool

import "encoding/json"

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

// MarshalJSON encodes s with "properties": {} when s is an object schema
// without properties (spec 1.1.0 "Schema Object": properties is required
// when type is object; the omitempty tag would drop an empty map).
func (s Schema) MarshalJSON() ([]byte, error) {
	type plain Schema
	if s.Ref == "" && s.Type == TypeObject && len(s.Properties) == 0 {
		return json.Marshal(struct {
			plain
			Properties map[string]*Schema `json:"properties"`
		}{plain(s), map[string]*Schema{}})
	}
	return json.Marshal(plain(s))
}
