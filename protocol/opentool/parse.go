package opentool

import "encoding/json"

// Parse validates data with ValidateJSON and decodes it into an *OpenTool.
//
// On any fault it returns nil and the *ValidationError (errors.Is(err,
// ErrInvalidDocument)). The document is decoded as json.Unmarshal would,
// except that field names match case-sensitively, as in validation: null
// and absent fields give zero values, present empty arrays give empty (not
// nil) Functions and Parameters slices, and enum numbers are float64. An
// empty schemas object or required list decodes to nil, so that
// Parse -> json.Marshal -> Parse gives an equal document. The extensions
// "additionalParameters" (functions) and "additionalProperties" (object
// schemas) become *bool fields, nil when absent or null. The other
// members of a Schema Object go to Schema.Extra as written (a null value
// too); a function's inputSchema, outputSchema and _meta are kept as
// written (object members in order, numbers as written); title,
// annotations, icons and the document's refused list are decoded.
func Parse(data []byte) (*OpenTool, error) {
	root, fault := decodeTree(data)
	if fault != nil {
		return nil, &ValidationError{Faults: []Fault{*fault}}
	}
	v := &validator{edges: map[string][]refEdge{}}
	v.document(root)
	if err := v.err(); err != nil {
		return nil, err
	}
	return buildDocument(root), nil
}

// The build* functions turn a validated tree into the Go types. They do not
// check kinds again: every value they read passed the validator.

func buildDocument(n *node) *OpenTool {
	d := &OpenTool{OpenTool: str(n.get("opentool"))}
	if info := n.get("info"); info != nil {
		d.Info = Info{Title: str(info.get("title")), Description: str(info.get("description")), Version: str(info.get("version"))}
	}
	if server := n.get("server"); server != nil {
		d.Server = &Server{URL: str(server.get("url")), Description: str(server.get("description"))}
	}
	fns := n.get("functions")
	d.Functions = make([]Function, 0, len(fns.arr))
	for _, fn := range fns.arr {
		d.Functions = append(d.Functions, buildFunction(fn))
	}
	if schemas := n.get("schemas"); schemas != nil && len(schemas.keys) > 0 {
		d.Schemas = make(map[string]*Schema, len(schemas.keys))
		for _, k := range schemas.keys {
			d.Schemas[k] = buildSchema(schemas.obj[k])
		}
	}
	if refused := n.get("refused"); refused != nil {
		for _, r := range refused.arr {
			d.Refused = append(d.Refused, Refusal{Kind: str(r.get("kind")), Name: str(r.get("name")), Reason: str(r.get("reason"))})
		}
	}
	return d
}

func buildFunction(n *node) Function {
	f := Function{Name: str(n.get("name")), Description: str(n.get("description"))}
	params := n.get("parameters")
	f.Parameters = make([]Parameter, 0, len(params.arr))
	for _, p := range params.arr {
		f.Parameters = append(f.Parameters, Parameter{
			Name:        str(p.get("name")),
			Description: str(p.get("description")),
			Schema:      buildSchema(p.get("schema")),
			Required:    p.get("required").b,
		})
	}
	f.AdditionalParameters = boolPtr(n.get("additionalParameters"))
	if r := n.get("return"); r != nil {
		f.Return = buildReturn(r)
	}
	if s := n.get("stream"); s != nil {
		f.Stream = &Stream{Data: buildReturn(s.get("data"))}
	}
	f.InputSchema = n.get("inputSchema").raw()
	f.OutputSchema = n.get("outputSchema").raw()
	f.Title = str(n.get("title"))
	if a := n.get("annotations"); a != nil {
		f.Annotations = &Annotations{
			Title:           str(a.get("title")),
			ReadOnlyHint:    boolPtr(a.get("readOnlyHint")),
			DestructiveHint: boolPtr(a.get("destructiveHint")),
			IdempotentHint:  boolPtr(a.get("idempotentHint")),
			OpenWorldHint:   boolPtr(a.get("openWorldHint")),
		}
	}
	if icons := n.get("icons"); icons != nil {
		for _, ic := range icons.arr {
			icon := Icon{Src: str(ic.get("src")), MIMEType: str(ic.get("mimeType")), Theme: str(ic.get("theme"))}
			if sizes := ic.get("sizes"); sizes != nil {
				for _, sz := range sizes.arr {
					icon.Sizes = append(icon.Sizes, sz.s)
				}
			}
			f.Icons = append(f.Icons, icon)
		}
	}
	f.Meta = n.get("_meta").raw()
	f.MCPTool = n.get("mcpTool").raw()
	if ex := n.get("execution"); ex != nil {
		f.Execution = &Execution{TaskSupport: str(ex.get("taskSupport"))}
	}
	return f
}

func buildReturn(n *node) *Return {
	return &Return{Name: str(n.get("name")), Description: str(n.get("description")), Schema: buildSchema(n.get("schema"))}
}

func buildSchema(n *node) *Schema {
	s := &Schema{
		Ref:         str(n.get("$ref")),
		Type:        str(n.get("type")),
		Description: str(n.get("description")),
	}
	for _, k := range n.keys {
		if !schemaFields[k] {
			if s.Extra == nil {
				s.Extra = map[string]json.RawMessage{}
			}
			s.Extra[k] = n.obj[k].raw()
		}
	}
	if s.Ref != "" {
		return s
	}
	if props := n.get("properties"); props != nil {
		s.Properties = make(map[string]*Schema, len(props.keys))
		for _, k := range props.keys {
			s.Properties[k] = buildSchema(props.obj[k])
		}
	}
	if items := n.get("items"); items != nil {
		s.Items = buildSchema(items)
	}
	if enum := n.get("enum"); enum != nil {
		s.Enum = make([]any, len(enum.arr))
		for i, v := range enum.arr {
			s.Enum[i] = value(v)
		}
	}
	if req := n.get("required"); req != nil && len(req.arr) > 0 {
		s.Required = make([]string, len(req.arr))
		for i, r := range req.arr {
			s.Required[i] = r.s
		}
	}
	s.AdditionalProperties = boolPtr(n.get("additionalProperties"))
	return s
}

// boolPtr returns the value of a boolean node, nil for nil.
func boolPtr(n *node) *bool {
	if n == nil {
		return nil
	}
	return new(n.b)
}

// str returns the value of a string node, "" for nil.
func str(n *node) string {
	if n == nil {
		return ""
	}
	return n.s
}

// value converts n to what json.Unmarshal puts in an any.
func value(n *node) any {
	switch n.kind {
	case kindBool:
		return n.b
	case kindNumber:
		f, _ := parseNumber(n.s)
		return f
	case kindString:
		return n.s
	case kindArray:
		a := make([]any, len(n.arr))
		for i, c := range n.arr {
			a[i] = value(c)
		}
		return a
	case kindObject:
		m := make(map[string]any, len(n.keys))
		for _, k := range n.keys {
			m[k] = value(n.obj[k])
		}
		return m
	}
	return nil
}

// Function returns the function named name, a pointer into d.Functions, or
// nil when there is none (or d is nil).
func (d *OpenTool) Function(name string) *Function {
	if d == nil {
		return nil
	}
	for i := range d.Functions {
		if d.Functions[i].Name == name {
			return &d.Functions[i]
		}
	}
	return nil
}
