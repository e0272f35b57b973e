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
package opentool

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
}

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
// AdditionalProperties is an extension of this package (see the field).
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
