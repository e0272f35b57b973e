// Package argcheck validates the arguments of a call against the
// parameters of the called OpenTool function before the call reaches the
// plugin, and reports every fault by parameter path in clear words.
//
// The schema of a function's arguments is the JSON Schema (draft 2020-12)
// its plugin declares (opentool.Function.InputSchema, e.g. an MCP tool's
// inputSchema as the server wrote it), or else its parameters (OpenTool
// Specification 1.1.0, "Function Object" parameters and "Parameter
// Object", with the extra keywords of their schemas: "minimum",
// "pattern", ...) as one JSON Schema object (opentool.ParametersJSONSchema).
// It is compiled once with github.com/santhosh-tekuri/jsonschema/v6, the
// one validator of the host: every keyword of draft 2020-12 is checked
// ("format" only as an annotation, as that draft says), no reference
// outside the schema is loaded, and a "pattern" that Go's regexp package
// cannot compile (ECMA-262 look-arounds, say) is not checked
// (Validator.Unchecked says so). A call's arguments are decoded
// once, exactly (internal/strictjson: numbers kept exact, member names
// matched as written, never case-folded) and validated against it:
//
//	v, err := argcheck.Compile(fn) // once, when the function is loaded
//	err = v.Validate(args)         // per call: nil or an *Error
//
// Parameters that the function does not declare are allowed, as in the
// OpenTool documents themselves, unless the function refuses them
// (opentool.Function.AdditionalParameters false); members an object
// schema does not declare likewise, unless it says "additionalProperties":
// false. A name is undeclared unless it is exactly a declared one: "MODE"
// is not "mode". Arguments that name a member twice, at any depth, are
// refused: which of the two the plugin would read is not for the host to
// guess.
package argcheck

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// ErrInvalidArguments is matched (errors.Is) by every *Error: the
// arguments of a call do not match the function's parameters.
var ErrInvalidArguments = errors.New("invalid arguments")

// ErrCompile is wrapped by Compile when a function's parameters cannot be
// turned into a JSON Schema or the schema does not compile.
var ErrCompile = errors.New("argcheck: cannot compile parameters")

// Validator checks call arguments against one function's parameters. It
// is immutable and safe for concurrent use.
type Validator struct {
	fn     string
	schema *jsonschema.Schema
	// unchecked says what the schema asks that v does not check.
	unchecked []string
	// empty is the result of validating {} (nil or an *Error), computed
	// once: calls without arguments skip decoding and validation.
	empty *Error
	// serverNulls are the parameters whose null a declared MCP server
	// judges, not the host (servernulls.go); nil for other functions.
	serverNulls map[string]bool
}

// Compile builds the Validator of fn, whose parameter schemas must already
// have their "$ref"s inlined (host routes hold inlined functions; see
// opentool.OpenTool.Inline). The schema is fn.InputSchema when fn has one,
// else the JSON Schema object {"type":"object","properties":{...},
// "required":[...]} of opentool.ParametersJSONSchema; it is compiled as
// draft 2020-12 unless its "$schema" names another draft.
//
// When fn.InputSchema does not compile (a keyword with a value its draft
// does not allow, a "$ref" to a document elsewhere), v checks fn's
// OpenTool parameters instead; when the extra keywords of the parameter
// schemas do not compile, v checks their OpenTool members only; v.Unchecked
// says so and why.
//
// Errors wrap ErrCompile: a nil fn, a parameter without schema, duplicate
// parameter names, a remaining "$ref" (opentool.ErrUnknownRef), or a
// schema the JSON Schema compiler rejects (e.g. an enum value of a type
// JSON cannot hold).
func Compile(fn *opentool.Function) (*Validator, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: nil function", ErrCompile)
	}
	var unchecked []string
	if len(fn.InputSchema) > 0 {
		js, err := opentool.DecodeJSONSchema(fn.InputSchema)
		if err == nil {
			var v *Validator
			if v, err = compile(fn.Name, js); err == nil {
				v.judgedBy(fn, js)
				return v, nil
			}
		}
		unchecked = append(unchecked, fmt.Sprintf("the declared input schema (%v); checking the OpenTool parameters only", err))
	}
	js, err := opentool.ParametersJSONSchema(nil, fn)
	if err != nil {
		return nil, fmt.Errorf("%w: function %q: %w", ErrCompile, fn.Name, err)
	}
	v, err := compile(fn.Name, js)
	if err != nil && hasExtra(fn) {
		// An extra keyword the compiler refuses ("minimum": "x", a
		// "$ref" into nothing): check the OpenTool members at least.
		core := fn.Clone()
		for i := range core.Parameters {
			stripExtra(core.Parameters[i].Schema)
		}
		if js, err2 := opentool.ParametersJSONSchema(nil, core); err2 == nil {
			if v, err2 = compile(fn.Name, js); err2 == nil {
				unchecked = append(unchecked, fmt.Sprintf("the extra keywords of the parameter schemas (%v); checking the OpenTool members only", err))
				err = nil
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: function %q: %w", ErrCompile, fn.Name, err)
	}
	v.unchecked = append(unchecked, v.unchecked...)
	v.judgedBy(fn, js)
	return v, nil
}

// judgedBy sets what of fn's arguments, whose schema is js, its server
// judges instead of v: for a declared MCP server's tool, the null of an
// optional parameter (servernulls.go).
func (v *Validator) judgedBy(fn *opentool.Function, js map[string]any) {
	if len(fn.MCPTool) > 0 {
		v.serverNulls = optionalParams(js)
	}
}

// hasExtra reports whether a parameter schema of fn has extra keywords
// (opentool.Schema.Extra), at any depth.
func hasExtra(fn *opentool.Function) bool {
	var walk func(s *opentool.Schema) bool
	walk = func(s *opentool.Schema) bool {
		if s == nil {
			return false
		}
		if len(s.Extra) > 0 || walk(s.Items) {
			return true
		}
		for _, p := range s.Properties {
			if walk(p) {
				return true
			}
		}
		return false
	}
	for _, p := range fn.Parameters {
		if walk(p.Schema) {
			return true
		}
	}
	return false
}

// stripExtra removes the extra keywords of s and of its subschemas.
func stripExtra(s *opentool.Schema) {
	if s == nil {
		return
	}
	s.Extra = nil
	stripExtra(s.Items)
	for _, p := range s.Properties {
		stripExtra(p)
	}
}

// compile compiles js, the JSON Schema of the arguments of function name.
func compile(name string, js map[string]any) (*Validator, error) {
	v := &Validator{fn: name}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(func(pattern string) (jsonschema.Regexp, error) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			v.unchecked = append(v.unchecked, fmt.Sprintf("pattern %q (not a regular expression Go's regexp package compiles: %v)", pattern, err))
			return anything(pattern), nil
		}
		return re, nil
	})
	loc := "mem://opentool/functions/" + url.PathEscape(name) + "/parameters.json"
	if err := c.AddResource(loc, js); err != nil {
		return nil, err
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, err
	}
	slices.Sort(v.unchecked)
	v.unchecked = slices.Compact(v.unchecked)
	v.schema = sch
	v.empty = v.check(map[string]any{})
	return v, nil
}

// noLoader refuses to load any schema: a function's schema may refer only
// to itself (and to the JSON Schema metaschemas, which the compiler
// holds), never make the host read a file or the network.
type noLoader struct{}

// Load implements jsonschema.URLLoader.
func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("the host loads no schema from elsewhere (%s)", u)
}

// anything is a pattern the host does not check: it matches every string.
type anything string

// MatchString implements jsonschema.Regexp.
func (anything) MatchString(string) bool { return true }

// String implements jsonschema.Regexp.
func (a anything) String() string { return string(a) }

// Function returns the name of the function v validates.
func (v *Validator) Function() string { return v.fn }

// Unchecked lists what the function's schema asks that v does not check,
// each in words (nil when v checks everything): a pattern Go's regexp
// package cannot compile, the declared input schema when it did not
// compile (v then checks the OpenTool parameters), the extra keywords of
// the parameter schemas when they did not compile.
func (v *Validator) Unchecked() []string { return slices.Clone(v.unchecked) }

// Validate checks args, the JSON object of a call's arguments, against the
// function's parameters. nil, empty (or all-whitespace) args and the JSON
// literal null mean no arguments: {}.
//
// It returns nil when args are valid, else an *Error (matching
// ErrInvalidArguments) listing every fault, sorted by parameter path: a
// missing required parameter, a value of the wrong type, a value outside
// an enum, a parameter or member the schema forbids (names compare
// exactly), arguments that are not a JSON object or not valid JSON. A
// member named twice is the one fault reported, at the member's path:
// `duplicate parameter "mode"` for a parameter, `a.b: duplicate member
// "x"` deeper down.
func (v *Validator) Validate(args []byte) error {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" || string(args) == "{}" {
		return v.emptyResult()
	}
	inst, err := strictjson.Decode(args)
	if err != nil {
		return &Error{Function: v.fn, Faults: []Fault{decodeFault(err)}}
	}
	if inst == nil {
		return v.emptyResult()
	}
	if e := v.check(v.withoutServerNulls(inst)); e != nil {
		return e
	}
	return nil
}

// decodeFault is the fault of arguments strictjson.Decode refuses.
func decodeFault(err error) Fault {
	var de *strictjson.DuplicateError
	switch {
	case !errors.As(err, &de):
		return Fault{Path: "", Message: "arguments are not valid JSON: " + err.Error()}
	case de.Path == "":
		return Fault{Path: de.MemberPath(), Message: "duplicate parameter " + strconv.Quote(de.Key)}
	}
	return Fault{Path: de.MemberPath(), Message: de.Path + ": duplicate member " + strconv.Quote(de.Key)}
}

// emptyResult returns the precomputed result for no arguments, copied so
// callers may keep or change it.
func (v *Validator) emptyResult() error {
	if v.empty == nil {
		return nil
	}
	return &Error{Function: v.fn, Faults: append([]Fault(nil), v.empty.Faults...)}
}

// check validates the decoded instance; nil when valid.
func (v *Validator) check(inst any) *Error {
	err := v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &Error{Function: v.fn, Faults: []Fault{{Path: "", Message: "arguments: " + err.Error()}}}
	}
	return &Error{Function: v.fn, Faults: faults(ve, inst)}
}
