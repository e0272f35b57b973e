package otc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// ToolDefinition is RFC 4.1 "Tool Definition Schema".
type ToolDefinition struct {
	// ID is "Toolkit.Tool@Version" (just "Toolkit.Tool" when the
	// document has no version).
	ID string `json:"id"`
	// Name is the OpenTool function name.
	Name string `json:"name"`
	// Description is the function's description.
	Description string `json:"description"`
	// Toolkit describes the serving plugin's document.
	Toolkit Toolkit `json:"toolkit"`
	// Input describes the parameters.
	Input ToolInput `json:"input"`
	// Output describes the result.
	Output *ToolOutput `json:"output,omitempty"`
}

// Toolkit is the "toolkit" of a ToolDefinition: the info of the serving
// plugin's OpenTool document.
type Toolkit struct {
	// Name is info.title made an identifier ([A-Za-z0-9]+, words
	// capitalized and joined), or the plugin name when the title has no
	// letter or digit.
	Name string `json:"name"`
	// Description is info.description ("" when the document has none).
	Description string `json:"description"`
	// Version is info.version as the document writes it.
	Version string `json:"version,omitempty"`
}

// ToolInput is the "input" of a ToolDefinition.
type ToolInput struct {
	// Parameters is the JSON Schema of the function's arguments object:
	// the schema as its plugin declares it (an MCP server's inputSchema,
	// with its $defs and $refs), or else {"type":"object","properties":
	// {...},"required":[...]} built from the parameters (no "$ref"), as
	// opentool.InputJSONSchema gives it.
	Parameters map[string]any `json:"parameters"`
}

// ToolOutput is the "output" of a ToolDefinition.
type ToolOutput struct {
	// AvailableModes is ["value", "error"]: every call either returns
	// the plugin's JSON result or fails.
	AvailableModes []string `json:"available_modes"`
	// Description describes the result.
	Description string `json:"description,omitempty"`
	// Value describes the value.
	Value *OutputValue `json:"value,omitempty"`
}

// OutputValue is the "value" of a ToolOutput.
type OutputValue struct {
	// Parameters is the JSON Schema of the value: the function's
	// outputSchema as its plugin declares it, else its return schema as
	// its document declares it; for a streaming function
	// {"type":"object","properties":{"items":{"type":"array","items":
	// ITEM}}}; {"type":"object"} when the document declares no return.
	Parameters map[string]any `json:"parameters"`
}

// index is the tools of one set of served functions.
type index struct {
	fns   []*opentool.Function // identity of the set (route tables are immutable)
	byKey map[string]*tool     // "Toolkit.Tool" → tool
	order []*tool              // listed tools, in order
	body  []byte               // GET /otc/tools for a key that sees everything
}

// tool is one listed tool.
type tool struct {
	fn      *opentool.Function
	key     string // "Toolkit.Tool"
	version string // version in the id ("" when none)
	raw     string // info.version as written
	plugin  string // the serving plugin ("" for the host's own)
	builtin bool   // one of the host's own functions (tool search's)
	def     []byte // its ToolDefinition, JSON
	// definition is its ToolDefinition, kept for run_code's only: its
	// description is each caller's own (keyview.CodeDescription).
	definition *ToolDefinition
}

// tools returns the index of the functions served now, rebuilding it
// when they changed.
func (h *Server) tools() *index {
	fis := h.b.Functions()
	if ix := h.index.Load(); ix != nil && ix.same(fis) {
		return ix
	}
	ix := h.build(fis)
	h.index.Store(ix)
	return ix
}

// same reports whether fis are the functions ix was built from.
func (ix *index) same(fis []host.FunctionInfo) bool {
	if len(fis) != len(ix.fns) {
		return false
	}
	for i := range fis {
		if fis[i].Function != ix.fns[i] {
			return false
		}
	}
	return true
}

// build makes the index of fis. A function whose id collides with an
// earlier one, or whose parameters cannot become a JSON Schema, is logged
// and left out.
func (h *Server) build(fis []host.FunctionInfo) *index {
	ix := &index{fns: make([]*opentool.Function, len(fis)), byKey: map[string]*tool{}}
	for i, fi := range fis {
		ix.fns[i] = fi.Function
		def, t, err := definition(fi)
		if err != nil {
			h.cfg.Logger.Warn("tool left out of /otc/tools", "plugin", fi.Plugin, "function", fi.Function.Name, "error", err)
			continue
		}
		if prev, dup := ix.byKey[t.key]; dup {
			h.cfg.Logger.Warn("tool id collides; later tool left out of /otc/tools", "id", t.key, "kept", prev.fn.Name, "plugin", fi.Plugin, "function", fi.Function.Name)
			continue
		}
		b, err := json.Marshal(def)
		if err != nil { // the values come from json-compatible documents
			h.cfg.Logger.Error("tool left out of /otc/tools: cannot encode it", "plugin", fi.Plugin, "function", fi.Function.Name, "error", err)
			continue
		}
		t.plugin, t.builtin, t.def = fi.Plugin, fi.Builtin, b
		if fi.Builtin && fi.Function.Name == host.RunCodeName {
			t.definition = &def
		}
		ix.byKey[t.key] = t
		ix.order = append(ix.order, t)
	}
	ix.body = ix.list(nil, nil)
	return ix
}

// code is run_code's tool in ix (--code-mode), nil when not served.
func (ix *index) code() *tool {
	for _, t := range ix.order {
		if t.definition != nil {
			return t
		}
	}
	return nil
}

// list returns the body of GET /otc/tools with the tools whose function
// name listed reports (all for a nil listed): the definitions encoded
// once by build, joined; run_code's with the description desc when
// desc is not nil (its caller's, with the declarations of its tools).
func (ix *index) list(listed func(fn string) bool, desc *string) []byte {
	b := append(make([]byte, 0, len(ix.body)), `{"$schema":`...)
	b = strconv.AppendQuote(b, SchemaURL)
	b = append(b, `,"tools":[`...)
	n := 0
	for _, t := range ix.order {
		if listed != nil && !listed(t.fn.Name) {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		def := t.def
		if desc != nil && t.definition != nil {
			d := *t.definition
			d.Description = *desc
			def, _ = json.Marshal(d) // encoded by build once: cannot fail
		}
		b = append(b, def...)
		n++
	}
	return append(b, "]}"...)
}

// definition returns the ToolDefinition of fi and its index entry.
func definition(fi host.FunctionInfo) (ToolDefinition, *tool, error) {
	f := fi.Function
	params, err := opentool.InputJSONSchema(nil, f)
	if err != nil {
		return ToolDefinition{}, nil, err
	}
	out, err := output(f)
	if err != nil {
		return ToolDefinition{}, nil, err
	}
	kit := ToolkitName(fi.Info.Title)
	if kit == "" {
		if kit = ToolkitName(fi.Plugin); kit == "" {
			kit = "Toolkit"
		}
	}
	t := &tool{fn: f, key: kit + "." + toolName(f.Name), version: versionID(fi.Info.Version), raw: fi.Info.Version}
	id := t.key
	if t.version != "" {
		id += "@" + t.version
	}
	return ToolDefinition{
		ID:          id,
		Name:        f.Name,
		Description: f.Description,
		Toolkit:     Toolkit{Name: kit, Description: fi.Info.Description, Version: fi.Info.Version},
		Input:       ToolInput{Parameters: params},
		Output:      out,
	}, t, nil
}

// output describes what calling f returns. Errors: f's OutputSchema is
// not a JSON object.
func output(f *opentool.Function) (*ToolOutput, error) {
	o := &ToolOutput{AvailableModes: []string{"value", "error"}}
	declared, err := opentool.OutputJSONSchema(f)
	if err != nil {
		return nil, err
	}
	switch {
	case declared != nil:
		if f.Return != nil {
			o.Description = f.Return.Description
		}
		if o.Description == "" {
			o.Description = "The tool's result."
		}
		o.Value = &OutputValue{Parameters: declared}
	case f.Stream != nil:
		items := map[string]any{}
		desc := ""
		if f.Stream.Data != nil {
			items = f.Stream.Data.Schema.JSONSchema()
			desc = f.Stream.Data.Description
		}
		o.Description = "The streamed items, in order, as {\"items\": [...]}."
		if desc != "" {
			o.Description += " Each item: " + desc
		}
		o.Value = &OutputValue{Parameters: map[string]any{
			"type":       opentool.TypeObject,
			"properties": map[string]any{"items": map[string]any{"type": opentool.TypeArray, "items": items}},
			"required":   []any{"items"},
		}}
	case f.Return != nil:
		o.Description = f.Return.Description
		if o.Description == "" {
			o.Description = f.Return.Name
		}
		o.Value = &OutputValue{Parameters: f.Return.Schema.JSONSchema()}
	default:
		o.Description = "The tool's JSON result; its OpenTool document declares no return value."
		o.Value = &OutputValue{Parameters: map[string]any{"type": opentool.TypeObject}}
	}
	return o, nil
}

// ToolkitName makes s an OTC toolkit identifier: its ASCII letters and
// digits, each word's first letter upper-cased and the words joined
// ("CRUD API for mock" → "CRUDAPIForMock", "weather-tools" →
// "WeatherTools"). It returns "" when s has no ASCII letter or digit.
func ToolkitName(s string) string {
	var b strings.Builder
	upper := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
			if upper {
				c -= 'a' - 'A'
			}
			fallthrough
		case c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			b.WriteByte(c)
			upper = false
		default:
			upper = true
		}
	}
	return b.String()
}

// toolName writes a function name ([a-zA-Z0-9_-]) as an OTC tool name
// ([A-Za-z0-9_]).
func toolName(fn string) string { return strings.ReplaceAll(fn, "-", "_") }

// versionID writes a document version as an OTC id version
// ([A-Za-z0-9_.-]; other bytes become "_").
func versionID(v string) string {
	b := []byte(v)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

// Errors of tool id resolution, wrapped with details.
var (
	// errBadToolID: tool_id is not "Toolkit.Tool[@Version]".
	errBadToolID = errors.New("malformed tool_id")
	// errUnknownTool: no served tool has that Toolkit.Tool.
	errUnknownTool = errors.New("unknown tool")
	// errWrongVersion: the tool is served at another version.
	errWrongVersion = errors.New("tool version not served")
)

// resolve finds the tool of id "Toolkit.Tool[@Version]". No version and
// "latest" mean the version served now; otherwise the version must be the
// served one (as in the id, or as the document writes it). A tool the
// caller's key may not call (keyview.MayCall) is unknown, exactly as a
// tool that is not served.
func (ix *index) resolve(ctx context.Context, id string) (*tool, error) {
	name, version, hasVersion := strings.Cut(id, "@")
	kit, fn, ok := strings.Cut(name, ".")
	if !ok || kit == "" || fn == "" || strings.Contains(fn, ".") || hasVersion && version == "" {
		return nil, fmt.Errorf("%w %q: it must look like Toolkit.Tool@Version, e.g. Calculator.add@1.0.0 (the version is optional)", errBadToolID, id)
	}
	t, ok := ix.byKey[name]
	if !ok || !keyview.MayCall(ctx, host.FunctionInfo{Plugin: t.plugin, Function: t.fn, Builtin: t.builtin}) {
		return nil, fmt.Errorf("%w %q: no served tool has that Toolkit.Tool; GET %s/tools lists them", errUnknownTool, name, BasePath)
	}
	if !hasVersion || version == "latest" || version == t.version || version == t.raw {
		return t, nil
	}
	served := "unversioned"
	use := name
	if t.version != "" {
		served = "at version " + t.version
		use += "@" + t.version
	}
	return nil, fmt.Errorf("%w: %s is served %s, not %s; call %s or %s@latest", errWrongVersion, name, served, version, use, name)
}
