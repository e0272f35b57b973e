// Package export turns an OpenTool document into the tool definitions that
// LLM APIs take, so the host's functions can be handed to a model as is:
//
//   - openai: OpenAI Responses API function tools,
//     {"type":"function","name","description","parameters","strict"}
//     (https://platform.openai.com/docs/guides/function-calling);
//   - openai-chat: OpenAI Chat Completions tools,
//     {"type":"function","function":{"name","description","parameters","strict"}};
//   - anthropic: Anthropic Messages API tools,
//     {"name","description","input_schema"};
//   - opentool: the OpenTool document itself.
//
// "parameters" and "input_schema" are the JSON Schema of the function's
// arguments as its plugin declares it (opentool.InputJSONSchema): an MCP
// server's inputSchema as the server wrote it (type unions, anyOf, $defs
// and $ref, bounds, formats, defaults), or else the parameters as one JSON
// Schema object, {"type":"object","properties":{...},"required":[...]}
// (opentool.ParametersJSONSchema), with every "$ref" inlined and the extra
// keywords of the schemas ("minimum", "pattern", ...) kept. Where the
// document refuses unknown names (a function's "additionalParameters":
// false, an object schema's "additionalProperties": false) the export says
// "additionalProperties": false too, so that a model is told what the host
// will refuse.
//
// With strict, the OpenAI formats are rewritten for OpenAI strict mode
// (strict.go: every member required, optional ones nullable, objects
// closed, keywords strict mode does not take dropped); a function that
// cannot be made strict (allOf, not, if/then/else, free-form objects, ...)
// is exported non-strict and reported as a StrictIssue.
//
// Streaming functions (OpenTool 2.0 "stream") are exported like the
// others: a model may ask for them, and the harness that runs the model's
// tool calls must then use POST /opentool/streamCall (or POST /otc/call,
// which collects the items) instead of POST /opentool/call. The LLM formats
// have no field to mark them; the opentool format keeps "stream".
package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Format is an export format.
type Format string

// The export formats.
const (
	// OpenAI is the OpenAI Responses API function tool.
	OpenAI Format = "openai"
	// OpenAIChat is the OpenAI Chat Completions function tool.
	OpenAIChat Format = "openai-chat"
	// Anthropic is the Anthropic Messages API tool.
	Anthropic Format = "anthropic"
	// OpenTool is the OpenTool document itself.
	OpenTool Format = "opentool"
)

// Formats lists every Format, in the order help texts show them.
var Formats = []Format{OpenAI, OpenAIChat, Anthropic, OpenTool}

// Errors returned (wrapped) by ParseFormat, Functions and Document.
var (
	// ErrUnknownFormat: the format is not one of Formats.
	ErrUnknownFormat = errors.New("export: unknown format")
	// ErrStrictUnsupported: strict was asked for a format other than
	// openai and openai-chat.
	ErrStrictUnsupported = errors.New("export: strict mode applies only to the openai and openai-chat formats")
	// ErrInvalidDocument: the document is nil, or a function's parameters
	// cannot become a JSON Schema (it wraps the opentool error then).
	ErrInvalidDocument = errors.New("export: invalid document")
	// ErrDeferUnsupported: deferred loading was asked for a format other
	// than anthropic and openai (Export); Chat Completions has no tool
	// search.
	ErrDeferUnsupported = errors.New("export: deferred loading applies only to the anthropic and openai formats")
)

// formatList is "openai, openai-chat, anthropic or opentool".
func formatList() string {
	s := make([]string, len(Formats))
	for i, f := range Formats {
		s[i] = string(f)
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// ParseFormat returns the Format named s. Errors wrap ErrUnknownFormat and
// list the valid names.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	if s == "" {
		return "", fmt.Errorf("%w: no format given; use %s", ErrUnknownFormat, formatList())
	}
	return "", fmt.Errorf("%w %q: use %s", ErrUnknownFormat, s, formatList())
}

// StrictIssue names a function that strict mode could not be applied to;
// it is exported with "strict": false.
type StrictIssue struct {
	// Function is the function's name.
	Function string `json:"function"`
	// Reason says what strict mode does not support, naming the
	// parameter path, e.g. `parameter "meta" is an object without
	// declared properties (any members); strict mode needs every member
	// declared`.
	Reason string `json:"reason"`
}

// String returns `function "NAME" exported without strict mode: REASON`.
func (i StrictIssue) String() string {
	return fmt.Sprintf("function %q exported without strict mode: %s", i.Function, i.Reason)
}

// OpenAITool is one function tool of the OpenAI Responses API.
type OpenAITool struct {
	// Type is "function".
	Type string `json:"type"`
	// Name is the function name.
	Name string `json:"name"`
	// Description is the function's description.
	Description string `json:"description"`
	// Parameters is the JSON Schema object of the parameters.
	Parameters map[string]any `json:"parameters"`
	// Strict says whether OpenAI strict mode is on. It is always written:
	// the Responses API turns strict mode on when it is left out.
	Strict bool `json:"strict"`
	// DeferLoading marks the function for OpenAI's tool search: the model
	// is shown its name and description, and its parameters only once a
	// search loads it (Deferred).
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// OpenAIChatTool is one function tool of the OpenAI Chat Completions API.
type OpenAIChatTool struct {
	// Type is "function".
	Type string `json:"type"`
	// Function is the function definition.
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the "function" member of an OpenAIChatTool.
type OpenAIFunction struct {
	// Name is the function name.
	Name string `json:"name"`
	// Description is the function's description.
	Description string `json:"description"`
	// Parameters is the JSON Schema object of the parameters.
	Parameters map[string]any `json:"parameters"`
	// Strict says whether OpenAI strict mode is on.
	Strict bool `json:"strict"`
}

// AnthropicTool is one tool of the Anthropic Messages API.
type AnthropicTool struct {
	// Name is the function name.
	Name string `json:"name"`
	// Description is the function's description.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema object of the parameters.
	InputSchema map[string]any `json:"input_schema"`
	// DeferLoading marks the tool for Anthropic's tool search: the model
	// is not shown its definition until a search finds it (Deferred).
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// AnthropicToolSearch is Anthropic's server-side tool search tool (BM25
// over the deferred tools' names, descriptions and parameters): the first
// tool of a Deferred export.
type AnthropicToolSearch struct {
	// Type is "tool_search_tool_bm25_20251119".
	Type string `json:"type"`
	// Name is "tool_search_tool_bm25".
	Name string `json:"name"`
}

// OpenAIToolSearch is OpenAI's hosted tool search tool of the Responses
// API (gpt-5.4 and later): the first tool of an OpenAI Deferred export.
type OpenAIToolSearch struct {
	// Type is "tool_search".
	Type string `json:"type"`
}

// Deferred returns the export of doc in format with deferred loading, for
// a catalog too large for a context window: the provider's tool search
// tool first, then every function with "defer_loading": true, so that the
// model is shown only what its searches load.
//   - Anthropic: AnthropicToolSearch (BM25), then each AnthropicTool
//     (https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/tool-search-tool);
//   - OpenAI (the Responses API): OpenAIToolSearch, then each OpenAITool,
//     strict mode rewritten as Functions does with strict
//     (https://developers.openai.com/api/docs/guides/tools-tool-search).
//
// Issues are those of Functions. Errors: ErrDeferUnsupported for any
// other format (Chat Completions has no tool search); those of
// Functions.
func Deferred(doc *opentool.OpenTool, format Format, strict bool) (json.RawMessage, []StrictIssue, error) {
	if format != Anthropic && format != OpenAI {
		return nil, nil, fmt.Errorf("%w (got %s)", ErrDeferUnsupported, format)
	}
	tools, issues, err := Functions(doc, format, strict)
	if err != nil {
		return nil, nil, err
	}
	out := make([]any, 0, len(tools)+1)
	if format == Anthropic {
		out = append(out, AnthropicToolSearch{Type: "tool_search_tool_bm25_20251119", Name: "tool_search_tool_bm25"})
	} else {
		out = append(out, OpenAIToolSearch{Type: "tool_search"})
	}
	for _, t := range tools {
		switch t := t.(type) {
		case AnthropicTool:
			t.DeferLoading = true
			out = append(out, t)
		case OpenAITool:
			t.DeferLoading = true
			out = append(out, t)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidDocument, err)
	}
	return b, issues, nil
}

// Functions returns the tool definition of every function of doc, in
// document order: OpenAITool, OpenAIChatTool or AnthropicTool values, or
// for OpenTool each opentool.Function as it is in doc. Each value
// marshals to the format's JSON.
//
// With strict (openai and openai-chat only) the parameters are rewritten
// for OpenAI strict mode; each function that cannot be made strict is
// exported with "strict": false and named in the returned issues.
//
// Errors: ErrUnknownFormat; ErrStrictUnsupported; ErrInvalidDocument for
// a nil doc or a function whose parameters cannot become a JSON Schema
// (wrapping the opentool error: unknown $ref, missing schema, duplicate
// parameter names).
func Functions(doc *opentool.OpenTool, format Format, strict bool) ([]any, []StrictIssue, error) {
	if _, err := ParseFormat(string(format)); err != nil {
		return nil, nil, err
	}
	if strict && format != OpenAI && format != OpenAIChat {
		return nil, nil, fmt.Errorf("%w (got %s)", ErrStrictUnsupported, format)
	}
	if doc == nil {
		return nil, nil, fmt.Errorf("%w: nil document", ErrInvalidDocument)
	}
	out := make([]any, 0, len(doc.Functions))
	var issues []StrictIssue
	for i := range doc.Functions {
		f := &doc.Functions[i]
		if format == OpenTool {
			out = append(out, *f)
			continue
		}
		params, err := opentool.InputJSONSchema(doc, f)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: function %q: %w", ErrInvalidDocument, f.Name, err)
		}
		isStrict := false
		if strict {
			if reason := makeStrict(params, f); reason != "" {
				issues = append(issues, StrictIssue{Function: f.Name, Reason: reason})
				// makeStrict may have rewritten part of params: start over.
				if params, err = opentool.InputJSONSchema(doc, f); err != nil {
					return nil, nil, fmt.Errorf("%w: function %q: %w", ErrInvalidDocument, f.Name, err)
				}
			} else {
				isStrict = true
			}
		}
		switch format {
		case OpenAI:
			out = append(out, OpenAITool{Type: "function", Name: f.Name, Description: f.Description, Parameters: params, Strict: isStrict})
		case OpenAIChat:
			out = append(out, OpenAIChatTool{Type: "function", Function: OpenAIFunction{Name: f.Name, Description: f.Description, Parameters: params, Strict: isStrict}})
		case Anthropic:
			out = append(out, AnthropicTool{Name: f.Name, Description: f.Description, InputSchema: params})
		}
	}
	return out, issues, nil
}

// Document returns the whole export as JSON: the array of Functions for
// the LLM formats (ready for a request's "tools"), or the OpenTool
// document itself for OpenTool. Issues and errors are those of Functions.
func Document(doc *opentool.OpenTool, format Format, strict bool) (json.RawMessage, []StrictIssue, error) {
	tools, issues, err := Functions(doc, format, strict)
	if err != nil {
		return nil, nil, err
	}
	var v any = tools
	if format == OpenTool {
		v = doc
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidDocument, err)
	}
	return b, issues, nil
}

// Options are what an export is asked for (Export): `opentool-host
// export`'s flags, GET /opentool/export's query.
type Options struct {
	// Format is the export format.
	Format Format
	// Strict rewrites the OpenAI formats for strict mode (Functions).
	Strict bool
	// DeferLoading gives the export with deferred loading (Deferred:
	// anthropic and openai) instead of Document's.
	DeferLoading bool
}

// Export returns the export of doc that o asks for, as JSON: Document's,
// or Deferred's with o.DeferLoading. Issues are those of Functions.
// Errors: ErrDeferUnsupported for DeferLoading with a format other than
// anthropic and openai; those of Document and Deferred.
func Export(doc *opentool.OpenTool, o Options) (json.RawMessage, []StrictIssue, error) {
	if o.DeferLoading {
		return Deferred(doc, o.Format, o.Strict)
	}
	return Document(doc, o.Format, o.Strict)
}
