package mcpadapter

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/opentool"
)

// converted is an MCP server's tool list as an OpenTool document.
type converted struct {
	doc *opentool.OpenTool
	// names maps a served function name to the MCP tool name.
	names map[string]string
	// dropped says, per MCP tool name, why it is not served.
	dropped map[string]string
}

// convert turns the tools of MCP server server into an OpenTool 1.1.0
// document (the table in doc.go). A tool whose input schema OpenTool
// cannot express is left out with the reason; the others are served.
func convert(server string, tools []*mcp.Tool) converted {
	c := converted{
		doc:     &opentool.OpenTool{OpenTool: "1.1.0", Info: opentool.Info{Title: server, Version: "1.0.0", Description: fmt.Sprintf("MCP server %q", server)}},
		names:   map[string]string{},
		dropped: map[string]string{},
	}
	sorted := append([]*mcp.Tool(nil), tools...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, t := range sorted {
		f, err := function(t)
		if err != nil {
			c.dropped[t.Name] = err.Error()
			continue
		}
		f.Name = uniqueName(validName(t.Name), c.names)
		c.names[f.Name] = t.Name
		c.doc.Functions = append(c.doc.Functions, *f)
	}
	return c
}

// function converts one tool (its name is set by the caller). Errors:
// the input schema is not an object schema OpenTool can express, with the
// JSON path of the construct ("inputSchema.properties.x.oneOf").
func function(t *mcp.Tool) (*opentool.Function, error) {
	in, err := schemaMap(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	s, err := opentool.FromJSONSchema(in)
	if err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	if s.Type != opentool.TypeObject {
		return nil, fmt.Errorf("inputSchema: type is %q, want \"object\"", s.Type)
	}
	f := &opentool.Function{Description: description(t), AdditionalParameters: s.AdditionalProperties}
	for _, name := range sortedKeys(s.Properties) {
		p := s.Properties[name]
		f.Parameters = append(f.Parameters, opentool.Parameter{Name: name, Description: p.Description, Schema: p, Required: slices.Contains(s.Required, name)})
	}
	f.Return = returnOf(t)
	return f, nil
}

// returnOf is the function's return from the tool's outputSchema, or nil
// when it has none or it does not convert (the result is then served
// undescribed, never refused).
func returnOf(t *mcp.Tool) *opentool.Return {
	if t.OutputSchema == nil {
		return nil
	}
	out, err := schemaMap(t.OutputSchema)
	if err != nil {
		return nil
	}
	s, err := opentool.FromJSONSchema(out)
	if err != nil {
		return nil
	}
	return &opentool.Return{Name: "result", Schema: s}
}

// description is the tool's description, led by its title when it has
// one, and its annotations' hints as a closing note.
func description(t *mcp.Tool) string {
	d := t.Description
	if t.Title != "" && !strings.HasPrefix(d, t.Title) {
		d = strings.TrimSpace(t.Title + ". " + d)
	}
	if a := t.Annotations; a != nil {
		var hints []string
		if a.ReadOnlyHint {
			hints = append(hints, "read-only")
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			hints = append(hints, "destructive")
		}
		if a.IdempotentHint {
			hints = append(hints, "idempotent")
		}
		if len(hints) > 0 {
			d = strings.TrimSpace(d + " (" + strings.Join(hints, ", ") + ")")
		}
	}
	if d == "" {
		d = "MCP tool " + t.Name
	}
	return d
}

// validName makes an MCP tool name valid for OpenTool
// (^[a-zA-Z0-9_-]{1,64}$): every other byte becomes "_", and the name is
// cut to 64 bytes.
func validName(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		b = []byte("tool")
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// uniqueName returns name, or name with the first free suffix "_2",
// "_3", ... (cut to fit 64 bytes) when taken is already using it.
func uniqueName(name string, taken map[string]string) string {
	if _, ok := taken[name]; !ok {
		return name
	}
	for i := 2; ; i++ {
		suffix := "_" + strconv.Itoa(i)
		n := name
		if len(n)+len(suffix) > 64 {
			n = n[:64-len(suffix)]
		}
		if _, ok := taken[n+suffix]; !ok {
			return n + suffix
		}
	}
}

// schemaMap returns a tool schema (any JSON-shaped value) as a map.
func schemaMap(v any) (map[string]any, error) {
	switch s := v.(type) {
	case map[string]any:
		return s, nil
	case nil:
		return map[string]any{"type": "object"}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object schema: %w", err)
	}
	return m, nil
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]*opentool.Schema) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
