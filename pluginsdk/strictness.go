package pluginsdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// The argument strictness shared by the Go, Python and Node SDKs
// (testdata/sdk-strictness.json; docs/writing-plugins.md, "Argument
// strictness"). decodeInput checks JSON, duplicates, unknown members and
// the required parameters; checkParams then checks every value against
// the reflected schema of the function's input, as the Python and Node
// SDKs check theirs against their declared schemas: type (values are
// never converted), null (never a value unless the schema allows it),
// required members of objects, enum, integers (integral, within
// ±MaxSafeInteger) and numbers (finite doubles).

// MaxSafeInteger is the largest integer an SDK accepts for an integer
// parameter, 2^53-1: every JSON reader (JavaScript's included) holds the
// integers from -MaxSafeInteger to MaxSafeInteger exactly, and the three
// SDKs refuse the others alike (code 400), whatever the Go field could
// hold. Use a string for larger identifiers.
const MaxSafeInteger = 1<<53 - 1

// argChecker walks decoded arguments (a strictjson tree) along the
// reflected JSON Schema of the input struct.
type argChecker struct {
	// rewritten is set when an integer written with a fraction or an
	// exponent (2.0, 1e3) was replaced in the tree by its plain form, so
	// that encoding/json decodes it into an integer field.
	rewritten bool
}

// checkParams checks each parameter of members, the arguments object,
// against its property schema in root (the reflected input schema), in
// declaration order. Unknown members and missing required parameters
// are checked before. It returns the first fault as a code 400 *Error
// and whether the tree was rewritten.
func checkParams(members map[string]any, root *jsonschema.Schema) (bool, error) {
	if root == nil || root.Properties == nil {
		return false, nil
	}
	c := &argChecker{}
	for name, s := range root.Properties.FromOldest() {
		v, ok := members[name]
		if !ok {
			continue
		}
		nv, err := c.check(v, s, strictjson.AppendKey("", name))
		if err != nil {
			return false, err
		}
		members[name] = nv
	}
	return c.rewritten, nil
}

// check checks v against s at path and returns v, or its rewritten form.
func (c *argChecker) check(v any, s *jsonschema.Schema, path string) (any, error) {
	if s == nil || s.Type == "" {
		// Any value (an interface field, a type union, json.RawMessage):
		// its numbers must still be doubles.
		return v, checkFree(v, path)
	}
	if v == nil {
		return nil, InvalidArguments("parameter %q: want %s, got null", path, s.Type)
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, wrongType(path, s.Type, v)
		}
		for _, name := range s.Required {
			if mv, ok := m[name]; !ok || mv == nil {
				return nil, InvalidArguments("missing required member %q", strictjson.AppendKey(path, name))
			}
		}
		var declared map[string]bool
		if s.Properties != nil {
			declared = make(map[string]bool, s.Properties.Len())
			for name, ps := range s.Properties.FromOldest() {
				declared[name] = true
				mv, ok := m[name]
				if !ok {
					continue
				}
				nv, err := c.check(mv, ps, strictjson.AppendKey(path, name))
				if err != nil {
					return nil, err
				}
				m[name] = nv
			}
		}
		// The others: a map's entries (a struct has none left, checked
		// by strictjson.CheckMembers), in name order.
		var rest []string
		for name := range m {
			if !declared[name] {
				rest = append(rest, name)
			}
		}
		slices.Sort(rest)
		for _, name := range rest {
			nv, err := c.check(m[name], s.AdditionalProperties, strictjson.AppendKey(path, name))
			if err != nil {
				return nil, err
			}
			m[name] = nv
		}
		return m, nil
	case "array":
		a, ok := v.([]any)
		if !ok {
			return nil, wrongType(path, s.Type, v)
		}
		for i, el := range a {
			nv, err := c.check(el, s.Items, path+"["+strconv.Itoa(i)+"]")
			if err != nil {
				return nil, err
			}
			a[i] = nv
		}
		return a, nil
	case "string":
		if _, ok := v.(string); !ok {
			return nil, wrongType(path, s.Type, v)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return nil, wrongType(path, s.Type, v)
		}
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return nil, wrongType(path, s.Type, v)
		}
		i, integral, inRange := integerOf(string(n))
		switch {
		case !integral:
			return nil, InvalidArguments("parameter %q: want integer, got %s", path, n)
		case !inRange:
			return nil, InvalidArguments("parameter %q: %s is out of range: an integer must be between %d and %d", path, n, -MaxSafeInteger, MaxSafeInteger)
		}
		if plain := strconv.FormatInt(i, 10); plain != string(n) && strings.ContainsAny(string(n), ".eE") {
			v, c.rewritten = json.Number(plain), true
		}
	case "number":
		n, ok := v.(json.Number)
		if !ok {
			return nil, wrongType(path, s.Type, v)
		}
		if err := checkDouble(n, path); err != nil {
			return nil, err
		}
	default: // "null", or a type this walk does not know: encoding/json decides
		return v, checkFree(v, path)
	}
	if len(s.Enum) > 0 && !inEnum(v, s.Enum) {
		vals := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			vals[i] = jsonText(e)
		}
		return nil, InvalidArguments("parameter %q: must be one of %s; got %s", path, strings.Join(vals, ", "), jsonText(v))
	}
	return v, nil
}

// checkFree checks a value of any type: its numbers, at any depth, must
// be finite doubles.
func checkFree(v any, path string) error {
	switch v := v.(type) {
	case json.Number:
		return checkDouble(v, path)
	case []any:
		for i, el := range v {
			if err := checkFree(el, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case map[string]any:
		names := make([]string, 0, len(v))
		for name := range v {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if err := checkFree(v[name], strictjson.AppendKey(path, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDouble refuses a number beyond the range of a double (1e400); one
// with more digits than a double holds is rounded as usual.
func checkDouble(n json.Number, path string) error {
	f, _ := strconv.ParseFloat(string(n), 64)
	if math.IsInf(f, 0) {
		return InvalidArguments("parameter %q: %s is out of range: a number must be within ±%g", path, n, math.MaxFloat64)
	}
	return nil
}

// wrongType is the fault of a value of another JSON type than want.
func wrongType(path, want string, v any) error {
	return InvalidArguments("parameter %q: want %s, got %s", path, want, treeKind(v))
}

// integerOf reads the JSON number literal lit exactly: whether it is an
// integer (however written: 2.0, 2e0, 2500e-2), and if so whether it is
// within ±MaxSafeInteger, and then its value. It never builds a large
// number: 1e999999999 is out of range at once.
func integerOf(lit string) (val int64, integral, inRange bool) {
	neg := strings.HasPrefix(lit, "-")
	lit = strings.TrimPrefix(lit, "-")
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
		e := strings.TrimPrefix(lit[i+1:], "+")
		eneg := strings.HasPrefix(e, "-")
		e = strings.TrimLeft(strings.TrimPrefix(e, "-"), "0")
		if len(e) > 9 {
			e = "1000000000" // beyond the digits of any call (64 MiB)
		}
		exp, _ = strconv.Atoi("0" + e)
		if eneg {
			exp = -exp
		}
	}
	digits := mant
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		digits = mant[:i] + mant[i+1:]
		exp -= len(mant) - i - 1
	}
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return 0, true, true // zero, however written
	}
	for strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		exp++
	}
	if exp < 0 {
		return 0, false, false // a fractional part remains
	}
	if len(digits)+exp > 16 { // MaxSafeInteger has 16 digits
		return 0, true, false
	}
	u, err := strconv.ParseInt(digits+strings.Repeat("0", exp), 10, 64)
	if err != nil || u > MaxSafeInteger {
		return 0, true, false
	}
	if neg {
		u = -u
	}
	return u, true, true
}

// inEnum reports whether v, a checked scalar of the tree, is one of
// enum's values: strings and booleans exactly, numbers by value.
func inEnum(v any, enum []any) bool {
	for _, e := range enum {
		switch v := v.(type) {
		case json.Number:
			f, _ := strconv.ParseFloat(string(v), 64)
			if ef, ok := enumNumber(e); ok && ef == f {
				return true
			}
		default:
			if v == e {
				return true
			}
		}
	}
	return false
}

// enumNumber returns enum value e as a float64 when it is a number.
func enumNumber(e any) (float64, bool) {
	switch e := e.(type) {
	case json.Number:
		f, err := e.Float64()
		return f, err == nil
	case float64:
		return e, true
	case float32:
		return float64(e), true
	case int:
		return float64(e), true
	case int64:
		return float64(e), true
	case int32:
		return float64(e), true
	case uint64:
		return float64(e), true
	}
	return 0, false
}

// jsonText is v as JSON, for messages (no HTML escaping).
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
