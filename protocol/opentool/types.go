// Package opentool is the OpenTool document model shared by the host and the
// plugin SDK: the Go types of OpenTool 1.0.0 and 1.1.0 (plus the 2.0 "stream"
// field), parsing, "$ref" resolution and validation with JSON paths.
//
// The types follow the "Objects" section of the OpenTool Specification 1.1.0
// (https://github.com/opentool-hub/opentool-spec), with two extensions that let a
// document refuse names it does not declare: "additionalParameters" on a
// Function Object and the JSON Schema keyword "additionalProperties" on an
// object Schema Object, both booleans (Function.AdditionalParameters,
// Schema.AdditionalProperties). Documents without them mean what they
// always meant: unknown names are allowed.
//
// Beyond OpenTool, the model keeps what a plugin or an MCP server declares
// in full (issue 22, "Schemas as declared"): a Schema Object keeps every
// JSON Schema keyword it does not define (Schema.Extra: "minimum",
// "format", "default", ...); a function may carry the JSON Schema (draft
// 2020-12) of its arguments and of its result as declared
// (Function.InputSchema, Function.OutputSchema) when its parameters are
// only an OpenTool projection of it (ProjectJSONSchema), and the MCP
// members title, annotations, icons and _meta, and an MCP server's own
// tool definition (Function.MCPTool); a document may list what
// its plugin refused to serve (OpenTool.Refused). OpenTool readers ignore
// these members.
package opentool

import "encoding/json"

// Version is the OpenTool specification version this package writes when it
// assembles a document ("1.1.0").
const Version = "1.1.0"

// OpenTool is the root document (spec 1.1.0 "OpenTool Object").
//
// OpenTool, Info and Functions are required; Server and Schemas are optional.
type OpenTool struct {
	// OpenTool is the version of the document format, e.g. "1.0.0" or "1.1.0".
	OpenTool string `json:"opentool"`
	// Info describes the document (required).
	Info Info `json:"info"`
	// Server is where the functions are served (1.1.0; optional).
	Server *Server `json:"server,omitempty"`
	// Functions are the callable functions (required; may be empty).
	Functions []Function `json:"functions"`
	// Schemas are named schemas that "$ref": "#/schemas/Name" points at.
	Schemas map[string]*Schema `json:"schemas,omitempty"`
	// Refused lists what the plugin declares elsewhere but leaves out of
	// this document, with the reason (e.g. an MCP tool whose input schema
	// is not a JSON object). It is an extension of this package, written
	// "refused": the host shows it in /health and marks the plugin
	// degraded; it never reaches the documents the host serves.
	Refused []Refusal `json:"refused,omitempty"`
}

// Refusal is one thing a plugin refused to serve (OpenTool.Refused).
type Refusal struct {
	// Kind is what was refused: "tool" (RefusedTool), "resource" or
	// "prompt".
	Kind string `json:"kind"`
	// Name is its name where it was declared (the MCP tool name).
	Name string `json:"name"`
	// Reason says why, naming the JSON path at fault.
	Reason string `json:"reason"`
}

// RefusedTool is the Kind of a refused tool.
const RefusedTool = "tool"

// Info is spec 1.1.0 "Info Object". Title and Version are required.
type Info struct {
	// Title is the document's title (required).
	Title string `json:"title"`
	// Description is a longer description (optional).
	Description string `json:"description,omitempty"`
	// Version is the document's own version (required), e.g. "1.0.0".
	Version string `json:"version"`
}

// Server is spec 1.1.0 "Server Object". URL is required.
type Server struct {
	// URL is the base URL of the OpenTool server, e.g.
	// "http://127.0.0.1:9627/opentool".
	URL string `json:"url"`
	// Description describes the server (optional).
	Description string `json:"description,omitempty"`
}

// Function is spec 1.1.0 "Function Object".
//
// Name must match ^[a-zA-Z0-9_-]{1,64}$; Name, Description and Parameters are
// required. Return may be nil (no return value). Stream is the OpenTool 2.0
// streaming description seen in the reference mock tool; when it is set the
// function is served by streamCall, not call. AdditionalParameters is an
// extension of this package (see the field).
type Function struct {
	// Name is the function name, unique within a document.
	Name string `json:"name"`
	// Description tells people and models what the function does.
	Description string `json:"description"`
	// Parameters are the function's named inputs (required; may be empty).
	Parameters []Parameter `json:"parameters"`
	// AdditionalParameters says whether a call may give parameters that
	// Parameters does not declare (by exact name). nil (absent, as in
	// every plain OpenTool 1.1.0 document) and true allow them; false
	// refuses them: the host answers such a call with invalid params
	// before the plugin sees it. It is an extension of OpenTool 1.1.0
	// "Function Object", written "additionalParameters", and becomes
	// "additionalProperties" of the parameters object in JSON Schema
	// (ParametersJSONSchema). Functions built with the Go plugin SDK set
	// it to false.
	AdditionalParameters *bool `json:"additionalParameters,omitempty"`
	// Return describes the result; nil means no return value. It is left
	// out of the JSON when nil, as the reference server does.
	Return *Return `json:"return,omitempty"`
	// Stream describes streamed results (OpenTool 2.0); nil when the
	// function does not stream.
	Stream *Stream `json:"stream,omitempty"`

	// InputSchema is the JSON Schema (draft 2020-12) of the call's
	// arguments object as the plugin declares it, an object schema
	// ("type": "object"); empty when Parameters say it all. When set,
	// Parameters (and AdditionalParameters) are its OpenTool projection
	// (ProjectParameters), and the host checks arguments against it and
	// serves it as declared: MCP inputSchema, OTC input.parameters, the
	// LLM export formats. It is a schema resource of its own: its "$ref"s
	// point into it ("#/$defs/X"), never at the document's schemas. An
	// extension of this package, written "inputSchema" as MCP names it.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is the JSON Schema (draft 2020-12) of the call's result
	// object as the plugin declares it (MCP outputSchema); empty when
	// Return says it all. When set, Return is its OpenTool projection and
	// the host serves it as declared (MCP outputSchema, OTC
	// output.value.parameters). An extension, written "outputSchema".
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Title is a human-readable name for the function (MCP Tool "title").
	// An extension, served on /mcp.
	Title string `json:"title,omitempty"`
	// Annotations are MCP tool annotations (MCP "ToolAnnotations"): hints
	// about what the function does. An extension, served on /mcp.
	Annotations *Annotations `json:"annotations,omitempty"`
	// Icons are icons for the function (MCP Tool "icons"). An extension,
	// served on /mcp.
	Icons []Icon `json:"icons,omitempty"`
	// Meta is the MCP "_meta" object of the tool, as declared. An
	// extension, served on /mcp.
	Meta json.RawMessage `json:"_meta,omitempty"`
	// MCPTool is the function's MCP tool definition (MCP "Tool") exactly
	// as its MCP server listed it in tools/list, a JSON object, every
	// member kept (description, annotations, execution, icons, _meta,
	// members of later revisions); empty for a function that is not an
	// MCP server's. The host serves it on /mcp in place of the definition
	// it would build from the members above, with only its name replaced
	// by the name the function is served as (and execution.taskSupport
	// left out while the host runs such a tool's tasks itself); the
	// OpenTool and Open Tool Calling projections do not read it. The host
	// honours it only from a declared MCP server it is the client of
	// (package mcpadapter), never from a plugin process. An extension,
	// written "mcpTool"; validation checks only that it is an object.
	MCPTool json.RawMessage `json:"mcpTool,omitempty"`
	// Execution is how the function may be run (MCP Tool "execution",
	// ToolExecution); nil when the function says nothing (a task is then
	// the host's choice: --task-after). An extension, written
	// "execution" as MCP names it, served on /mcp.
	Execution *Execution `json:"execution,omitempty"`
}

// The values of Execution.TaskSupport (MCP ToolExecution.taskSupport).
const (
	// TaskSupportForbidden: a call is never run as a task.
	TaskSupportForbidden = "forbidden"
	// TaskSupportOptional: a call may be run as a task (the host's
	// default for a function that says nothing).
	TaskSupportOptional = "optional"
	// TaskSupportRequired: a call is always run as a task; a client that
	// cannot take one is refused.
	TaskSupportRequired = "required"
)

// Execution is MCP ToolExecution: how a function may be run.
type Execution struct {
	// TaskSupport is TaskSupportForbidden, TaskSupportOptional or
	// TaskSupportRequired; "" when not said (as optional).
	TaskSupport string `json:"taskSupport,omitempty"`
}

// TaskSupport is f's Execution.TaskSupport, "" when f has no Execution.
func (f *Function) TaskSupport() string {
	if f == nil || f.Execution == nil {
		return ""
	}
	return f.Execution.TaskSupport
}

// Annotations are the hints of MCP "ToolAnnotations" (MCP 2025-06-18 and
// later), each nil when not declared. They are hints: nothing enforces
// them.
type Annotations struct {
	// Title is a human-readable title.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint: the function does not modify its environment
	// (MCP default false).
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: the function may perform destructive updates
	// (meaningful when not read-only; MCP default true).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: calling it again with the same arguments has no
	// further effect (MCP default false).
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the function interacts with an open world of
	// external entities (MCP default true).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// Icon is an MCP "Icon": an image a client may show for the function.
type Icon struct {
	// Src is the icon's URI: an http(s) URL or a data: URI (required).
	Src string `json:"src"`
	// MIMEType is the image's media type, e.g. "image/png".
	MIMEType string `json:"mimeType,omitempty"`
	// Sizes lists the sizes the icon has, e.g. ["48x48"] or ["any"].
	Sizes []string `json:"sizes,omitempty"`
	// Theme is "light" or "dark" when the icon is made for one.
	Theme string `json:"theme,omitempty"`
}

// IsStream reports whether f is a streaming function (Stream is set).
func (f *Function) IsStream() bool { return f.Stream != nil }

// Parameter is spec 1.1.0 "Parameter Object". Name, Schema and Required are
// required.
type Parameter struct {
	// Name is the key of the argument in a call's params object.
	Name string `json:"name"`
	// Description tells people and models what the parameter is for.
	Description string `json:"description,omitempty"`
	// Schema is the parameter's format.
	Schema *Schema `json:"schema"`
	// Required says whether a call must give this parameter.
	Required bool `json:"required"`
}

// Return is spec 1.1.0 "Return Object". Name and Schema are required.
type Return struct {
	// Name names the returned value.
	Name string `json:"name"`
	// Description tells people and models what is returned.
	Description string `json:"description,omitempty"`
	// Schema is the returned value's format.
	Schema *Schema `json:"schema"`
}

// Stream is the OpenTool 2.0 "stream" object of a function: the format of
// each streamed item.
type Stream struct {
	// Data describes one streamed item.
	Data *Return `json:"data,omitempty"`
}

// Schema is spec 1.1.0 "Schema Object", or a reference to a named schema.
//
// A reference has only Ref set (and maybe Description), in the one form the
// spec uses: "#/schemas/Name". Otherwise Type is required and is one of the
// Type* constants; Properties is required for "object", Items for "array".
// AdditionalProperties and Extra are extensions of this package (see the
// fields).
type Schema struct {
	// Ref is "#/schemas/Name" for a reference, empty otherwise.
	Ref string `json:"$ref,omitempty"`
	// Type is boolean, integer, number, string, array or object.
	Type string `json:"type,omitempty"`
	// Description describes the value.
	Description string `json:"description,omitempty"`
	// Properties describe an object's members (type object).
	Properties map[string]*Schema `json:"properties,omitempty"`
	// Items describes an array's elements (type array).
	Items *Schema `json:"items,omitempty"`
	// Enum lists the allowed values; each must match Type.
	Enum []any `json:"enum,omitempty"`
	// Required lists the properties an object must have (type object).
	Required []string `json:"required,omitempty"`
	// AdditionalProperties says whether an object (type object only) may
	// have members that Properties does not declare (by exact name): nil
	// (absent, as in every plain OpenTool 1.1.0 document) and true allow
	// them, false refuses them. It is the JSON Schema keyword of the same
	// name in its boolean form, an extension of OpenTool 1.1.0 "Schema
	// Object".
	AdditionalProperties *bool `json:"additionalProperties,omitempty"`
	// Extra holds the JSON Schema keywords of the schema that the fields
	// above do not define, each as written ("minimum": 1, "format":
	// "uri", "default": "x", "pattern": ...). It is written into the
	// schema's JSON object after the fields (sorted by name), kept by
	// Parse, Clone and Inline, and part of JSONSchema, so that the host
	// checks arguments against these keywords too. OpenTool readers
	// ignore them. A key that names one of the fields above ("type",
	// "$ref", ...) is ignored.
	Extra map[string]json.RawMessage `json:"-"`
}

// The schema types of spec 1.1.0 "Schema Object".
const (
	TypeBoolean = "boolean"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeString  = "string"
	TypeArray   = "array"
	TypeObject  = "object"
)

// RefPrefix is the prefix of the only "$ref" form the spec uses.
const RefPrefix = "#/schemas/"
