package argcheck

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/opentool-host/opentool-host/internal/strictjson"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Error lists every way a call's arguments fail the function's
// parameters. It matches ErrInvalidArguments with errors.Is; the HTTP API
// sends it as JSON-RPC -32602 with data {"faults": Faults}.
type Error struct {
	// Function is the called function's name.
	Function string `json:"function"`
	// Faults are the problems found, sorted by Path (at least one).
	Faults []Fault `json:"faults"`
}

// Fault is one problem with the arguments.
type Fault struct {
	// Path locates the offending value from the arguments object: a
	// parameter name ("text"), then ".member" for object members and
	// "[i]" for array elements ("currentWeatherInfo.location",
	// "tags[2]"); a member name that is not a plain identifier is written
	// `["a b"]`. It is empty for the arguments object itself. For a
	// missing parameter it is the path the parameter should have had.
	Path string `json:"path"`
	// Message is the complete, readable description, naming the path:
	// `missing required parameter "text"`, `id: must be integer, got
	// string`, `currentWeatherInfo.format: must be one of "celsius",
	// "fahrenheit"; got "kelvin"`, `n: must be <= 100; got 1000`,
	// `code: must match the pattern "^[A-Z]{3}$"; got "abc"`, `name: must
	// have at least 2 characters; got 1`, `unknown parameter "x" is not allowed`,
	// `duplicate parameter "mode"`, `a.b: duplicate member "x"` (Path
	// "a.b.x"), `arguments must be a JSON object, got array`.
	Message string `json:"message"`
}

// String returns f.Message.
func (f Fault) String() string { return f.Message }

// Error implements error: `invalid arguments for function "NAME": ` and
// the fault messages joined by "; ".
func (e *Error) Error() string {
	return fmt.Sprintf("invalid arguments for function %q: %s", e.Function, e.Summary())
}

// Summary returns the fault messages joined by "; ".
func (e *Error) Summary() string {
	msgs := make([]string, len(e.Faults))
	for i, f := range e.Faults {
		msgs[i] = f.Message
	}
	return strings.Join(msgs, "; ")
}

// Is reports whether target is ErrInvalidArguments.
func (e *Error) Is(target error) bool { return target == ErrInvalidArguments }

// printer renders the library's own messages for error kinds without a
// rewrite of their own.
var printer = message.NewPrinter(language.English)

// faults flattens the validation error tree of inst into sorted faults
// with rewritten messages.
func faults(ve *jsonschema.ValidationError, inst any) []Fault {
	var out []Fault
	collect(ve, inst, &out)
	if len(out) == 0 { // cannot happen: a failed validation has a leaf
		out = append(out, Fault{Message: "arguments: " + ve.Error()})
	}
	slices.SortStableFunc(out, func(a, b Fault) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.CompactFunc(out, func(a, b Fault) bool { return a == b })
}

// collect appends the faults of ve and its causes.
func collect(ve *jsonschema.ValidationError, inst any, out *[]Fault) {
	p, val := locate(inst, ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Group, *kind.Schema, *kind.Reference, *kind.AllOf:
		for _, c := range ve.Causes {
			collect(c, inst, out)
		}
		if len(ve.Causes) > 0 {
			return
		}
	case *kind.Required:
		for _, m := range k.Missing {
			full := strictjson.AppendKey(p, m)
			*out = append(*out, Fault{Path: full, Message: "missing required parameter " + strconv.Quote(full)})
		}
		return
	case *kind.AdditionalProperties:
		for _, m := range k.Properties {
			full := strictjson.AppendKey(p, m)
			*out = append(*out, Fault{Path: full, Message: "unknown parameter " + strconv.Quote(full) + " is not allowed"})
		}
		return
	case *kind.Type:
		want := strings.Join(k.Want, " or ")
		if p == "" {
			*out = append(*out, Fault{Message: "arguments must be a JSON " + want + ", got " + k.Got})
			return
		}
		got := k.Got
		if _, isNum := val.(json.Number); isNum {
			got += " " + display(val)
		}
		*out = append(*out, Fault{Path: p, Message: p + ": must be " + want + ", got " + got})
		return
	case *kind.Enum:
		*out = append(*out, Fault{Path: p, Message: label(p) + ": must be " + oneOf(k.Want) + "; got " + display(val)})
		return
	case *kind.Const:
		*out = append(*out, Fault{Path: p, Message: label(p) + ": must be " + display(k.Want) + "; got " + display(val)})
		return
	case *kind.Minimum:
		*out = append(*out, bound(p, ">=", k.Want, val))
		return
	case *kind.Maximum:
		*out = append(*out, bound(p, "<=", k.Want, val))
		return
	case *kind.ExclusiveMinimum:
		*out = append(*out, bound(p, ">", k.Want, val))
		return
	case *kind.ExclusiveMaximum:
		*out = append(*out, bound(p, "<", k.Want, val))
		return
	case *kind.MultipleOf:
		*out = append(*out, Fault{Path: p, Message: label(p) + ": must be a multiple of " + ratString(k.Want) + "; got " + display(val)})
		return
	case *kind.MinLength:
		*out = append(*out, count(p, "at least", k.Want, k.Got, "character"))
		return
	case *kind.MaxLength:
		*out = append(*out, count(p, "at most", k.Want, k.Got, "character"))
		return
	case *kind.MinItems:
		*out = append(*out, count(p, "at least", k.Want, k.Got, "item"))
		return
	case *kind.MaxItems:
		*out = append(*out, count(p, "at most", k.Want, k.Got, "item"))
		return
	case *kind.MinProperties:
		*out = append(*out, count(p, "at least", k.Want, k.Got, "member"))
		return
	case *kind.MaxProperties:
		*out = append(*out, count(p, "at most", k.Want, k.Got, "member"))
		return
	case *kind.Pattern:
		*out = append(*out, Fault{Path: p, Message: label(p) + ": must match the pattern " + strconv.Quote(k.Want) + "; got " + display(val)})
		return
	case *kind.AnyOf:
		*out = append(*out, Fault{Path: p, Message: label(p) + ": does not match any of the allowed forms"})
		return
	case *kind.OneOf:
		msg := "does not match any of the allowed forms"
		if len(k.Subschemas) > 1 {
			msg = "matches more than one of the allowed forms"
		}
		*out = append(*out, Fault{Path: p, Message: label(p) + ": " + msg})
		return
	}
	*out = append(*out, Fault{Path: p, Message: label(p) + ": " + ve.ErrorKind.LocalizedString(printer)})
}

// bound is the fault of a number at p outside a bound: `n: must be <= 100;
// got 1000` (the value as the call wrote it).
func bound(p, op string, want *big.Rat, val any) Fault {
	return Fault{Path: p, Message: label(p) + ": must be " + op + " " + ratString(want) + "; got " + display(val)}
}

// count is the fault of a length or size at p: `s: must have at least 2
// characters; got 1`.
func count(p, which string, want, got int, unit string) Fault {
	plural := func(n int) string {
		if n == 1 {
			return unit
		}
		return unit + "s"
	}
	return Fault{Path: p, Message: fmt.Sprintf("%s: must have %s %d %s; got %d", label(p), which, want, plural(want), got)}
}

// ratString writes a schema's bound as JSON would: 100, 0.5, 1e+21.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// locate turns a JSON Pointer's tokens into a fault path, walking inst so
// that array indexes are written "[i]", and returns the value found there
// (nil when absent).
func locate(inst any, loc []string) (string, any) {
	var b strings.Builder
	cur := inst
	for _, tok := range loc {
		switch c := cur.(type) {
		case []any:
			b.WriteString("[" + tok + "]")
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
				cur = c[i]
			} else {
				cur = nil
			}
		case map[string]any:
			strictjson.WriteKey(&b, tok)
			cur = c[tok]
		default:
			strictjson.WriteKey(&b, tok)
			cur = nil
		}
	}
	return b.String(), cur
}

// label names path p in a message; the root is "arguments".
func label(p string) string {
	if p == "" {
		return "arguments"
	}
	return p
}

// oneOf renders allowed values: `"a"` or `one of "a", "b"`.
func oneOf(vals []any) string {
	if len(vals) == 1 {
		return display(vals[0])
	}
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = display(v)
	}
	return "one of " + strings.Join(s, ", ")
}

// maxDisplay caps the length of a value quoted in a message, in bytes.
const maxDisplay = 64

// display renders v as JSON, shortened to about maxDisplay bytes.
func display(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > maxDisplay {
		n := maxDisplay
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		return string(b[:n]) + "…"
	}
	return string(b)
}
