package pluginsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/invopop/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// Toolkit is a Tool assembled from typed Go functions, so that a plugin is
// a few lines long:
//
//	type AddIn struct {
//		A float64 `json:"a" jsonschema:"description=First operand"`
//		B float64 `json:"b" jsonschema:"description=Second operand"`
//	}
//	type Result struct {
//		Result float64 `json:"result"`
//	}
//
//	func main() {
//		tk := pluginsdk.NewToolkit(opentool.Info{Title: "Calculator", Version: "1.0.0"})
//		tk.Add(pluginsdk.Func("add", "Add two numbers.",
//			func(ctx context.Context, in AddIn) (Result, error) { return Result{in.A + in.B}, nil }))
//		pluginsdk.Serve(tk)
//	}
//
// Load returns an OpenTool 1.1.0 document with one Function per added
// Function, in the order they were added. CallJSON decodes the arguments
// exactly into the function's input struct (member names as the json tags
// spell them, never case-folded; a member given twice or unknown is
// refused) and encodes its output as the result object; StreamCall does
// the same for streaming functions.
//
// A Toolkit is safe for concurrent use. Functions are normally added before
// Serve; adding later is safe but the host only reads the document once.
type Toolkit struct {
	info opentool.Info

	mu     sync.RWMutex
	fns    []*Function
	byName map[string]*Function
}

// Compile-time checks that Toolkit implements the plugin interfaces.
var (
	_ Tool       = (*Toolkit)(nil)
	_ JSONCaller = (*Toolkit)(nil)
	_ Streamer   = (*Toolkit)(nil)
)

// NewToolkit returns an empty Toolkit whose document has the given info
// (Title and Version are required by the OpenTool specification).
func NewToolkit(info opentool.Info) *Toolkit {
	return &Toolkit{info: info, byName: make(map[string]*Function)}
}

// Add adds functions to the toolkit and returns tk for chaining.
//
// Add panics, as these are programmer errors found at start-up, when a
// function is the zero Function (not built with Func or StreamFunc), when
// its name does not match ^[a-zA-Z0-9_-]{1,64}$, or when the name is already
// in use in tk (or appears twice in fns). On a panic no function of fns is
// added.
func (tk *Toolkit) Add(fns ...Function) *Toolkit {
	tk.mu.Lock()
	defer tk.mu.Unlock()
	seen := make(map[string]bool, len(fns))
	for _, f := range fns {
		name := f.def.Name
		switch {
		case f.call == nil && f.stream == nil:
			panic("pluginsdk: Toolkit.Add: zero Function; build functions with Func or StreamFunc")
		case !opentool.ValidFunctionName(name):
			panic(fmt.Sprintf("pluginsdk: Toolkit.Add: invalid function name %q: must match ^[a-zA-Z0-9_-]{1,64}$", name))
		case tk.byName[name] != nil || seen[name]:
			panic(fmt.Sprintf("pluginsdk: Toolkit.Add: duplicate function name %q", name))
		}
		seen[name] = true
	}
	for _, f := range fns {
		tk.fns = append(tk.fns, &f)
		tk.byName[f.def.Name] = &f
	}
	return tk
}

// Load implements Tool. It returns a new OpenTool 1.1.0 document
// (opentool.Version) with tk's info and its functions in the order they
// were added; Functions is empty, not nil, when none were added. The
// document shares no memory with tk, so the caller may modify it. The error
// is always nil.
func (tk *Toolkit) Load(context.Context) (*opentool.OpenTool, error) {
	tk.mu.RLock()
	defer tk.mu.RUnlock()
	doc := &opentool.OpenTool{
		OpenTool:  opentool.Version,
		Info:      tk.info,
		Functions: make([]opentool.Function, 0, len(tk.fns)),
	}
	for _, f := range tk.fns {
		doc.Functions = append(doc.Functions, f.Definition())
	}
	return doc, nil
}

// lookup returns the function called name, or the 404 *Error of
// FunctionNotFound.
func (tk *Toolkit) lookup(name string) (*Function, error) {
	tk.mu.RLock()
	f := tk.byName[name]
	tk.mu.RUnlock()
	if f == nil {
		return nil, FunctionNotFound(name)
	}
	return f, nil
}

// CallJSON implements JSONCaller. args is the JSON object of arguments (nil,
// empty or "null" count as {}); the result is the function's output encoded
// as a JSON object ({} for a nil output or a struct{} output).
//
// Errors: FunctionNotFound (404) for an unknown name; code 404 when name is
// a streaming function (use StreamCall); code 400 (InvalidArguments) when
// args is not valid JSON, not a JSON object, lacks a required parameter
// (absent or null), names a member twice at any depth, has a member that
// is not exactly a field's JSON name at any depth of structs ("MODE" is
// not "mode"), lacks a required member of a nested object, or has a value
// of the wrong type (values are never converted), null where the field's
// schema has a type, a value outside its enum, an integer with a
// fractional part or beyond ±MaxSafeInteger, or a number beyond a double:
// the rules all three SDKs share (testdata/sdk-strictness.json). The
// message names the first fault by its path, e.g. `missing required
// parameter "b"`, `duplicate parameter "mode"`, `unknown field "MODE": the
// function has no parameter "MODE" (names are case-sensitive: the
// parameter is "mode")`, `missing required member "origin.x"`, `parameter
// "path[1].x": want integer, got string` or `parameter "mode": must be one
// of "fast", "slow"; got "quick"`. Code 500 when the output cannot be
// encoded (e.g. a NaN); otherwise the function's own error, unchanged (an
// *Error keeps its code, any other error becomes code 500 on the wire).
func (tk *Toolkit) CallJSON(ctx context.Context, name string, args []byte) ([]byte, error) {
	f, err := tk.lookup(name)
	if err != nil {
		return nil, err
	}
	if f.call == nil {
		return nil, Errorf(CodeNotFound, "function %q streams; call it with streamCall", name)
	}
	return f.call(ctx, args)
}

// Call implements Tool by way of CallJSON: args is encoded to JSON and the
// JSON result decoded into a map whose numbers are json.Number, so that
// encoding the map again gives back exactly what the function produced.
// Errors are those of CallJSON, plus code 400 when args cannot be encoded
// and code 500 when the result cannot be decoded.
func (tk *Toolkit) Call(ctx context.Context, name string, args map[string]any) (map[string]any, error) {
	raw, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	out, err := tk.CallJSON(ctx, name, raw)
	if err != nil {
		return nil, err
	}
	return decodeObject(out)
}

// StreamCall implements Streamer. args is as for Call; each item the
// function sends is encoded to JSON and handed to send as a map whose
// numbers are json.Number. The function's send returns send's error, and
// returns ctx's error once ctx is done.
//
// Errors: FunctionNotFound (404) for an unknown name; code 404 when name
// does not stream (use Call); code 400 for bad arguments, as for CallJSON;
// otherwise the function's own error, unchanged.
func (tk *Toolkit) StreamCall(ctx context.Context, name string, args map[string]any, send func(item map[string]any) error) error {
	f, err := tk.lookup(name)
	if err != nil {
		return err
	}
	if f.stream == nil {
		return Errorf(CodeNotFound, "function %q does not stream", name)
	}
	raw, err := encodeArgs(args)
	if err != nil {
		return err
	}
	return f.stream(ctx, raw, send)
}

// Function is one function of a Toolkit: its OpenTool description and the
// Go function that runs it. Build one with Func or StreamFunc; the zero
// Function is not usable. A Function is an immutable value and may be added
// to several toolkits.
type Function struct {
	def    opentool.Function
	call   func(ctx context.Context, args []byte) ([]byte, error)
	stream func(ctx context.Context, args []byte, send func(map[string]any) error) error
	result func(ctx context.Context, args []byte) (*mcp.CallToolResult, error) // ResultFunc (mcp.go)
}

// Name returns the function's name, e.g. "add".
func (f Function) Name() string { return f.def.Name }

// Definition returns a deep copy of the function's OpenTool description,
// as it appears in the Toolkit's document; the caller may modify it.
func (f Function) Definition() opentool.Function {
	return *f.def.Clone()
}

// Func builds a Function named name that runs fn.
//
// In must be a struct type. Each of its top-level JSON fields (as
// encoding/json sees them: the name comes from the json tag, embedded
// structs are flattened, `json:"-"` fields are skipped) becomes one
// Parameter, in field order. The field's schema is derived by
// github.com/invopop/jsonschema reflection and projected onto OpenTool
// with opentool.ProjectJSONSchema; its description comes from the
// jsonschema tag (`jsonschema:"description=..."`), enums from
// `jsonschema:"enum=a,enum=b"`, and the constraints the tag sets
// (`jsonschema:"minimum=1,maximum=100"`, pattern, format, default,
// minLength, maxLength, minItems, ..., exclusiveMinimum, multipleOf) are
// kept in the schema (opentool.Schema.Extra), so they reach the document
// and the host enforces them: a call with n=1000 against maximum=100 is
// refused as invalid arguments before the plugin sees it. When the
// projection cannot say it all (a type union from oneof_type, an
// interface field's "any value", a map's value schema), the reflected
// schema of In is the function's InputSchema too, which the host then
// checks and serves. A parameter is required unless its json tag has
// omitempty or omitzero (invopop's rules; `jsonschema:"required"` forces
// it). The Function refuses parameters In does not have
// (AdditionalParameters false), and the schema of every struct below it
// refuses members the struct does not have ("additionalProperties":
// false), so the host refuses such calls before they reach the plugin.
//
// Before fn runs, the arguments are checked as CallJSON describes: the
// required top-level parameters are present, no member is given twice and
// every member of an object that decodes into a struct, at any depth, is
// exactly the JSON name of one of its fields (encoding/json's rules for
// embedded structs, `json:"-"` and tag names; maps and interface values
// take any names); then every value against the reflected schema of its
// field (type, null, required members, enum, integer range; interface
// fields and type unions take any value). The tag constraints (minimum,
// pattern, ...) are left to the host, as the Python and Node SDKs leave
// them. An integer written 2.0 or 1e3 fills an int field as 2 or 1000.
// Then encoding/json decodes them.
//
// Out is the result object: a struct, a pointer to a struct, or a map with
// string keys. Its reflected schema becomes the function's Return, named
// "result" (and its OutputSchema when the projection cannot say it all).
// With Out = struct{} the function has no return value (Return is nil) and
// the result object is {}.
//
// fn receives the decoded arguments. Return an *Error to choose the error
// code the caller sees (e.g. InvalidArguments for 400); any other error
// reaches the caller with code 500.
//
// Func panics, a programmer error found at start-up, when In is not a
// struct, when Out is not an object type, or when In or Out is recursive
// (refers to itself). The name is checked by Toolkit.Add.
func Func[In, Out any](name, description string, fn func(context.Context, In) (Out, error)) Function {
	params, required, in, root, err := parametersOf(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("pluginsdk: Func %q: input: %v", name, err))
	}
	outType := reflect.TypeFor[Out]()
	var ret *opentool.Return
	var out json.RawMessage
	if outType != reflect.TypeFor[struct{}]() {
		var schema *opentool.Schema
		if schema, out, err = objectSchemaOf(outType); err != nil {
			panic(fmt.Sprintf("pluginsdk: Func %q: output: %v", name, err))
		}
		ret = &opentool.Return{Name: "result", Schema: schema}
	}
	return Function{
		def: opentool.Function{
			Name:                 name,
			Description:          description,
			Parameters:           params,
			AdditionalParameters: new(false),
			Return:               ret,
			InputSchema:          in,
			OutputSchema:         out,
		},
		call: func(ctx context.Context, args []byte) ([]byte, error) {
			var in In
			if err := decodeInput(args, required, root, &in); err != nil {
				return nil, err
			}
			out, err := fn(ctx, in)
			if err != nil {
				return nil, err
			}
			return encodeOutput(out)
		},
	}
}

// StreamFunc builds a streaming Function named name that runs fn. In is as
// for Func, and its arguments are checked and decoded the same way. Item
// is the type of one streamed item, with the same rules as Func's Out; its
// schema becomes the function's Stream.Data, named "item". The function
// has no Return.
//
// fn calls send once per item, in order. send returns an error when the
// caller has gone away or ctx is done (then ctx.Err()), or when the item
// cannot be encoded (code 500); fn should then stop and return that error.
// fn's returned error ends the stream as for Func.
//
// StreamFunc panics on the same programmer errors as Func.
func StreamFunc[In, Item any](name, description string, fn func(ctx context.Context, in In, send func(Item) error) error) Function {
	params, required, in, root, err := parametersOf(reflect.TypeFor[In]())
	if err != nil {
		panic(fmt.Sprintf("pluginsdk: StreamFunc %q: input: %v", name, err))
	}
	schema, _, err := objectSchemaOf(reflect.TypeFor[Item]())
	if err != nil {
		panic(fmt.Sprintf("pluginsdk: StreamFunc %q: item: %v", name, err))
	}
	return Function{
		def: opentool.Function{
			Name:                 name,
			Description:          description,
			Parameters:           params,
			AdditionalParameters: new(false),
			InputSchema:          in,
			Stream:               &opentool.Stream{Data: &opentool.Return{Name: "item", Schema: schema}},
		},
		stream: func(ctx context.Context, args []byte, send func(map[string]any) error) error {
			var in In
			if err := decodeInput(args, required, root, &in); err != nil {
				return err
			}
			return fn(ctx, in, func(item Item) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				raw, err := encodeOutput(item)
				if err != nil {
					return err
				}
				m, err := decodeObject(raw)
				if err != nil {
					return err
				}
				return send(m)
			})
		},
	}
}

// reflector derives the JSON Schemas of Func's types: definitions are
// inlined ("$ref"-free, so that each property of the root converts on its
// own) and the root struct is expanded. It recurses forever on recursive
// types; checkNotRecursive must run first.
func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true}
}

// parametersOf returns the OpenTool parameters of struct type t, in field
// order, the names of the required ones, the JSON Schema of the
// arguments object as reflected when the parameters are only its
// projection (nil when they say it all), and the reflected schema itself,
// which the arguments of each call are checked against (checkParams).
func parametersOf(t reflect.Type) ([]opentool.Parameter, []string, json.RawMessage, *jsonschema.Schema, error) {
	if t.Kind() != reflect.Struct {
		return nil, nil, nil, nil, fmt.Errorf("type %s is not a struct", t)
	}
	if err := checkNotRecursive(t, map[reflect.Type]bool{}); err != nil {
		return nil, nil, nil, nil, err
	}
	js := reflector().ReflectFromType(t)
	required := make(map[string]bool, len(js.Required))
	for _, name := range js.Required {
		required[name] = true
	}
	params := []opentool.Parameter{}
	lossy := false
	if js.Properties != nil {
		for name, prop := range js.Properties.FromOldest() {
			schema, lost, err := convertSchema(prop)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("parameter %q: %w", name, err)
			}
			lossy = lossy || lost
			desc := schema.Description
			schema.Description = ""
			params = append(params, opentool.Parameter{
				Name:        name,
				Description: desc,
				Schema:      schema,
				Required:    required[name],
			})
		}
	}
	var declared json.RawMessage
	if lossy {
		var err error
		if declared, err = rootSchema(js); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return params, js.Required, declared, js, nil
}

// objectSchemaOf returns the OpenTool schema of an object type: a struct, a
// pointer to a struct, or a map with string keys; and its JSON Schema as
// reflected when the OpenTool schema is only its projection (nil when it
// says it all).
func objectSchemaOf(t reflect.Type) (*opentool.Schema, json.RawMessage, error) {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case base.Kind() == reflect.Struct:
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
	default:
		return nil, nil, fmt.Errorf("type %s is not a struct, pointer to struct or map with string keys; a result must be a JSON object", t)
	}
	if err := checkNotRecursive(t, map[reflect.Type]bool{}); err != nil {
		return nil, nil, err
	}
	js := reflector().ReflectFromType(t)
	schema, lossy, err := convertSchema(js)
	if err != nil || !lossy {
		return schema, nil, err
	}
	declared, err := rootSchema(js)
	return schema, declared, err
}

// convertSchema projects a reflected JSON Schema onto OpenTool with
// opentool.ProjectJSONSchema, which keeps the "additionalProperties":
// false that invopop/jsonschema writes for structs and the constraints
// its tags set ("minimum", "maximum", "pattern", "format", "default",
// ...); lossy says whether the projection leaves something out (a type
// union, an interface field's "any value", a map's value schema).
func convertSchema(s *jsonschema.Schema) (*opentool.Schema, bool, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, false, fmt.Errorf("encode JSON Schema: %w", err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false, fmt.Errorf("decode JSON Schema %s: %w", raw, err)
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "$schema")
		delete(m, "$id")
	}
	out, losses, err := opentool.ProjectJSONSchema(v)
	if err != nil {
		return nil, false, fmt.Errorf("convert JSON Schema %s: %w", raw, err)
	}
	return out, len(losses) > 0, nil
}

// rootSchema is the reflected schema of a root type as a function
// declares it (opentool.Function.InputSchema, OutputSchema): without
// "$schema" and "$id" (which names the Go package).
func rootSchema(s *jsonschema.Schema) (json.RawMessage, error) {
	c := *s
	c.Version, c.ID = "", ""
	raw, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode JSON Schema: %w", err)
	}
	return raw, nil
}

// checkNotRecursive returns an error when t refers to itself through its
// JSON-visible fields; the reflector would recurse forever on it.
func checkNotRecursive(t reflect.Type, onPath map[reflect.Type]bool) error {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return checkNotRecursive(t.Elem(), onPath)
	case reflect.Struct:
		if onPath[t] {
			return fmt.Errorf("type %s is recursive, which OpenTool schemas cannot describe", t)
		}
		onPath[t] = true
		defer delete(onPath, t)
		for i := range t.NumField() {
			f := t.Field(i)
			if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" {
				continue
			}
			if err := checkNotRecursive(f.Type, onPath); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodeArgs encodes a Call's argument map; nil gives nil (no arguments).
func encodeArgs(args map[string]any) ([]byte, error) {
	if args == nil {
		return nil, nil
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, InvalidArguments("encode arguments: %v", err)
	}
	return raw, nil
}

// decodeInput decodes the JSON arguments object args into in (a pointer to
// a struct) exactly: it must be one JSON object (or nothing, or null: {}),
// with the required parameters present and not null, no member given
// twice at any depth, and member names that are exactly the JSON names of
// the fields they fill at every depth of structs; then every value must
// match root, the reflected schema of in (checkParams: types, null,
// required members, enum, integers within ±MaxSafeInteger, finite
// numbers). Only then does encoding/json decode it, whose
// case-insensitive matching cannot pick another member than the one
// checked. Errors are code 400.
func decodeInput(args []byte, required []string, root *jsonschema.Schema, in any) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	tree, err := strictjson.Decode(args)
	if err != nil {
		return decodeError(err)
	}
	members, ok := tree.(map[string]any)
	if !ok {
		return InvalidArguments("arguments must be a JSON object, got %s", treeKind(tree))
	}
	if err := strictjson.CheckMembers(tree, reflect.TypeOf(in).Elem()); err != nil {
		return unknownMemberError(err)
	}
	for _, name := range required {
		if v, ok := members[name]; !ok || v == nil {
			return InvalidArguments("missing required parameter %q", name)
		}
	}
	rewritten, err := checkParams(members, root)
	if err != nil {
		return err
	}
	if rewritten { // integers written 2.0 or 1e3, now 2 and 1000
		if args, err = json.Marshal(members); err != nil {
			return InvalidArguments("invalid arguments: %v", err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(in); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "arguments"
			}
			return InvalidArguments("parameter %q: want %s, got %s", field, jsonKind(te.Type), te.Value)
		}
		return InvalidArguments("invalid arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// decodeError is the code 400 error of arguments strictjson.Decode
// refuses: `arguments are not valid JSON: ...`, `duplicate parameter
// "mode"` or `a.b: duplicate member "x"`.
func decodeError(err error) error {
	var de *strictjson.DuplicateError
	switch {
	case !errors.As(err, &de):
		return InvalidArguments("arguments are not valid JSON: %v", err)
	case de.Path == "":
		return InvalidArguments("duplicate parameter %q", de.Key)
	}
	return InvalidArguments("%s: duplicate member %q", de.Path, de.Key)
}

// unknownMemberError is the code 400 error of a member name that no field
// has exactly: `unknown field "c": the function has no parameter "c"`,
// `unknown field "origin.X": the object has no member "X" (names are
// case-sensitive: the member is "x")`.
func unknownMemberError(err error) error {
	var ue *strictjson.UnknownMemberError
	if !errors.As(err, &ue) {
		return InvalidArguments("invalid arguments: %v", err)
	}
	what, hint := "the function has no parameter", "the parameter"
	if ue.Path != "" {
		what, hint = "the object has no member", "the member"
	}
	msg := fmt.Sprintf("unknown field %q: %s %q", ue.MemberPath(), what, ue.Name)
	if ue.Field != "" {
		msg += fmt.Sprintf(" (names are case-sensitive: %s is %q)", hint, ue.Field)
	}
	return InvalidArguments("%s", msg)
}

// treeKind names the JSON type of a value of a strictjson tree.
func treeKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	default:
		return "number"
	}
}

// jsonKind names the JSON type that decodes into Go type t, for messages.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)"
		}
		return "array"
	case reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	default:
		return t.String()
	}
}

// encodeOutput encodes a function's output as a JSON object; a nil map or
// pointer gives {}. An encoding failure is code 500.
func encodeOutput(out any) ([]byte, error) {
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, ToolFailure("encode result: %v", err)
	}
	if string(raw) == "null" {
		return []byte("{}"), nil
	}
	return raw, nil
}

// decodeObject decodes a JSON object with numbers as json.Number. A failure
// is code 500.
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, ToolFailure("decode result: %v", err)
	}
	return m, nil
}
