// Package strictjson decodes JSON exactly: member names are kept as
// written (no case folding) and an object that names a member twice is an
// error instead of "the last one wins".
//
// Decode produces the tree that encoding/json (with UseNumber) and
// github.com/santhosh-tekuri/jsonschema/v6's UnmarshalJSON produce, so the
// tree can be validated by that library, but it refuses what they let
// through silently:
//
//	v, err := strictjson.Decode([]byte(`{"mode":"safe","mode":"rm -rf"}`))
//	// err is a *DuplicateError: Path "", Key "mode"
//
// CheckMembers then compares such a tree with the Go type it is about to
// be decoded into, refusing member names that are not exactly the JSON
// name of a struct field, so that encoding/json's case-insensitive
// matching never picks a member the validator did not see.
package strictjson

import (
	"encoding/json"
	"strconv"
)

// MaxDepth is the deepest nesting of arrays and objects Decode accepts,
// the limit of encoding/json: the top-level array or object is level 1.
const MaxDepth = 10000

// Decode decodes b, one JSON value (RFC 8259) with optional whitespace
// (space, tab, CR, LF) around it, into the values encoding/json puts in an
// any when UseNumber is set:
//
//   - object: map[string]any (non-nil, also when empty), member names as
//     written after unescaping;
//   - array: []any (non-nil, also when empty);
//   - number: json.Number, the literal as written (exact, any size);
//   - string: string; invalid UTF-8 and escapes of lone UTF-16
//     surrogates become U+FFFD, as encoding/json does;
//   - true, false: bool; null: nil.
//
// Errors:
//   - *SyntaxError when b is not exactly one JSON value: bad syntax,
//     unexpected end, data after the value, or nesting deeper than
//     MaxDepth. b is a syntax error exactly when json.Valid(b) is false.
//   - *DuplicateError when b is valid JSON but an object, at any depth,
//     has two members with the same (unescaped) name; it names the first
//     such object in document order, by the position of the second name.
//
// On error the value is nil. The result shares no memory with b.
func Decode(b []byte) (any, error) {
	d := decoder{data: b}
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos < len(d.data) {
		return nil, d.badChar("after top-level value")
	}
	if d.dup != nil {
		d.dup.Path = render(d.dup.segs)
		d.dup.segs = nil
		return nil, d.dup
	}
	return v, nil
}

// Valid reports whether b is exactly one JSON value: the same answer as
// encoding/json's Valid (duplicate member names are allowed), from
// Decode's scanner without building any value, several times faster on
// long strings (they are checked 8 bytes at a time).
func Valid(b []byte) bool {
	d := decoder{data: b, skip: true}
	d.skipSpace()
	if _, err := d.value(); err != nil {
		return false
	}
	d.skipSpace()
	return d.pos == len(d.data)
}

// SyntaxError is the error of Decode for input that is not one JSON value.
type SyntaxError struct {
	// Msg says what is wrong, in encoding/json's words: "invalid
	// character 'x' after object key", "unexpected end of JSON input",
	// "invalid character '1' after top-level value".
	Msg string
	// Offset is the 0-based byte offset of the offending byte in the
	// input, or the input's length when it ends too early. (encoding/json's
	// SyntaxError.Offset counts the offending byte too: it is Offset+1
	// there.)
	Offset int64
	// context is Msg after the offending byte ("after object key"), ""
	// when Msg names no byte of the input.
	context string
}

// Error returns Msg and the offset: "invalid character '}' after object
// key at byte offset 12".
func (e *SyntaxError) Error() string {
	return e.Msg + " at byte offset " + strconv.FormatInt(e.Offset, 10)
}

// Blind returns Error without the offending byte: "invalid character
// after object key at byte offset 12". A file's fault says this, so that
// no byte of a file that is not what its name says (a link to a secret,
// a keys file) reaches a log or a caller.
func (e *SyntaxError) Blind() string {
	if e.context == "" {
		return e.Error()
	}
	return "invalid character " + e.context + " at byte offset " + strconv.FormatInt(e.Offset, 10)
}

// What returns Msg without the offending byte and without the offset:
// "invalid character after object key", "unexpected end of JSON input".
func (e *SyntaxError) What() string {
	if e.context == "" {
		return e.Msg
	}
	return "invalid character " + e.context
}

// DuplicateError is the error of Decode for an object that has a member
// name twice.
type DuplicateError struct {
	// Path is the JSON path of the object that has the member twice, ""
	// for the top-level value. Member names made only of ASCII letters,
	// digits, '_' and '-' are dotted ("a.b"), others are quoted in
	// brackets (`a["b c"]`), array elements are "[i]": "tags[2]",
	// "points[0].meta".
	Path string
	// Key is the member name given twice, unescaped.
	Key string
	// Offset is the 0-based byte offset of the opening quote of the
	// second occurrence of Key.
	Offset int64

	segs []segment // the path, leaf first, while Decode unwinds
}

// MemberPath returns the path of the duplicated member itself: Path with
// Key appended ("a.b.x", `["b c"]`, "mode" for a top-level member).
func (e *DuplicateError) MemberPath() string { return AppendKey(e.Path, e.Key) }

// Error returns `duplicate member "x" in object a.b at byte offset 17`
// (`duplicate member "x" at byte offset 5` at the top level).
func (e *DuplicateError) Error() string {
	in := ""
	if e.Path != "" {
		in = " in object " + e.Path
	}
	return "duplicate member " + strconv.Quote(e.Key) + in + " at byte offset " + strconv.FormatInt(e.Offset, 10)
}

// decoder is the state of one Decode call.
type decoder struct {
	data  []byte
	pos   int // index of the next byte to read
	depth int // arrays and objects open around pos

	// dup is the first duplicate found. Decoding goes on after it, so
	// that a syntax error further on still wins, and the containers
	// around the duplicate add their path segments as they close:
	// dupLevel is the depth whose container still has to add its
	// segment to dup when its current child value returns.
	dup      *DuplicateError
	dupLevel int

	// skip (Valid) checks the syntax only: no values are built and
	// duplicate members are not looked for.
	skip bool
}

// value decodes the value starting at d.pos (whitespace skipped).
func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.eof()
	}
	switch c := d.data[d.pos]; c {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return d.number()
		}
		return nil, d.badChar("looking for beginning of value")
	}
}

// open enters the array or object whose bracket is at d.pos.
func (d *decoder) open() error {
	d.depth++
	if d.depth > MaxDepth {
		return &SyntaxError{Msg: "exceeded max depth of " + strconv.Itoa(MaxDepth) + " nested arrays and objects", Offset: int64(d.pos)}
	}
	d.pos++
	d.skipSpace()
	if d.pos >= len(d.data) {
		return d.eof()
	}
	return nil
}

// object decodes the object whose '{' is at d.pos.
func (d *decoder) object() (any, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	var m map[string]any
	if !d.skip {
		m = map[string]any{}
	}
	if d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return m, nil
	}
	for {
		if d.data[d.pos] != '"' {
			return nil, d.badChar("looking for beginning of object key string")
		}
		keyOff := d.pos
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if err := d.expect(':', "after object key"); err != nil {
			return nil, err
		}
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if !d.skip {
			if d.dupLevel == d.depth+1 {
				d.dup.segs = append(d.dup.segs, segment{key: k})
				d.dupLevel--
			}
			if _, seen := m[k]; seen && d.dup == nil {
				d.dup = &DuplicateError{Key: k, Offset: int64(keyOff)}
				d.dupLevel = d.depth
			}
			m[k] = v
		}
		end, err := d.next('}', "after object key:value pair")
		if err != nil || end {
			return m, err
		}
	}
}

// array decodes the array whose '[' is at d.pos.
func (d *decoder) array() (any, error) {
	if err := d.open(); err != nil {
		return nil, err
	}
	var a []any // nil in skip mode, as object's map: boxed, it allocates nothing
	if !d.skip {
		a = []any{}
	}
	if d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return a, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if !d.skip {
			if d.dupLevel == d.depth+1 {
				d.dup.segs = append(d.dup.segs, segment{index: len(a), isIndex: true})
				d.dupLevel--
			}
			a = append(a, v)
		}
		end, err := d.next(']', "after array element")
		if err != nil || end {
			return a, err
		}
	}
}

// next reads what follows a member or element: ',' (then whitespace, and
// end is false) or the closing bracket (end is true). context names the
// place in a syntax error.
func (d *decoder) next(closing byte, context string) (end bool, err error) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return false, d.eof()
	}
	switch d.data[d.pos] {
	case ',':
		d.pos++
		d.skipSpace()
		if d.pos >= len(d.data) {
			return false, d.eof()
		}
		return false, nil
	case closing:
		d.pos++
		d.depth--
		return true, nil
	}
	return false, d.badChar(context)
}

// expect skips whitespace and the byte c.
func (d *decoder) expect(c byte, context string) error {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return d.eof()
	}
	if d.data[d.pos] != c {
		return d.badChar(context)
	}
	d.pos++
	return nil
}

// literal reads the literal lit (true, false or null) at d.pos.
func (d *decoder) literal(lit string) error {
	for i := 1; i < len(lit); i++ {
		p := d.pos + i
		if p >= len(d.data) {
			d.pos = p
			return d.eof()
		}
		if d.data[p] != lit[i] {
			d.pos = p
			return d.badChar("in literal " + lit + " (expecting " + quoteChar(lit[i]) + ")")
		}
	}
	d.pos += len(lit)
	return nil
}

// number reads the number literal at d.pos:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *decoder) number() (any, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	if err := d.intPart(); err != nil {
		return nil, err
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if err := d.digits("after decimal point in numeric literal"); err != nil {
			return nil, err
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if err := d.digits("in exponent of numeric literal"); err != nil {
			return nil, err
		}
	}
	if d.skip {
		return nil, nil
	}
	return json.Number(d.data[start:d.pos]), nil
}

// intPart reads "0" or [1-9][0-9]*.
func (d *decoder) intPart() error {
	if d.pos >= len(d.data) {
		return d.eof()
	}
	switch c := d.data[d.pos]; {
	case c == '0':
		d.pos++
		return nil
	case c >= '1' && c <= '9':
		return d.digits("")
	}
	return d.badChar("in numeric literal")
}

// digits reads [0-9]+; context names the place of a missing digit.
func (d *decoder) digits(context string) error {
	if d.pos >= len(d.data) {
		return d.eof()
	}
	if !isDigit(d.data[d.pos]) {
		return d.badChar(context)
	}
	d.pos++
	for d.pos < len(d.data) && isDigit(d.data[d.pos]) {
		d.pos++
	}
	return nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipSpace skips the whitespace JSON allows between tokens.
func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// eof is the error of input that ends too early.
func (d *decoder) eof() error {
	return &SyntaxError{Msg: "unexpected end of JSON input", Offset: int64(len(d.data))}
}

// badChar is the error of the byte at d.pos in context.
func (d *decoder) badChar(context string) error {
	return &SyntaxError{Msg: "invalid character " + quoteChar(d.data[d.pos]) + " " + context, Offset: int64(d.pos), context: context}
}

// quoteChar formats c as encoding/json's messages do: 'x', '\n', '"'.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}
