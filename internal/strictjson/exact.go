package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// Fault is a fault of a file decoded exactly (CheckExact, DecodeExact):
// the JSON path of the fault and what is wrong
// ("$.limits.memory_mb", "must be an integer").
type Fault struct {
	// Path is the JSON path ("$" for the whole document).
	Path string
	// Message says what is wrong.
	Message string
	// Line and Column are where in the file the fault is, 1-based (the
	// column in characters, a tab one); 0 when not known. A hand-written
	// file's faults have them (HandWritten).
	Line, Column int
	// Excerpt is the line of the file at Line, its string values shown
	// as '*', then a caret under Column; "" when not shown.
	Excerpt string
}

// Error returns "PATH: MESSAGE"; with a line, "LINE:COLUMN: PATH:
// MESSAGE" (no "$: " for the whole file), then the excerpt on the next
// lines.
func (f *Fault) Error() string {
	if f.Line == 0 {
		return f.Path + ": " + f.Message
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d:%d: ", f.Line, f.Column)
	if f.Path != "$" {
		b.WriteString(f.Path + ": ")
	}
	b.WriteString(f.Message)
	if f.Excerpt != "" {
		b.WriteString("\n" + f.Excerpt)
	}
	return b.String()
}

// InFile returns err as an error of file (a name or path), whose Error
// is "FILE:LINE:COLUMN: ..." for a *Fault with a line (Fault.Error, with
// the excerpt), else "FILE: ERROR". It unwraps to err.
func InFile(file string, err error) error { return &fileError{file: file, err: err} }

// fileError is InFile's error.
type fileError struct {
	file string
	err  error
}

// Error implements error.
func (e *fileError) Error() string {
	if f, ok := e.err.(*Fault); ok && f.Line > 0 {
		return e.file + ":" + f.Error()
	}
	return e.file + ": " + e.err.Error()
}

// Unwrap returns the error of the file.
func (e *fileError) Unwrap() error { return e.err }

// Rooted writes a member path (as MemberPath returns it) from the root
// "$": "a.b" is "$.a.b".
func Rooted(p string) string { return "$." + strings.TrimPrefix(p, "$.") }

// CheckExact checks data as a file of Go type t (a struct): at most
// maxBytes, one JSON object, no duplicate member anywhere, no member t
// does not declare. It returns the decoded tree (Decode's values).
// Errors: a *Fault with the path of the first fault.
func CheckExact(data []byte, t reflect.Type, maxBytes int) (any, error) {
	if len(data) > maxBytes {
		return nil, &Fault{Path: "$", Message: fmt.Sprintf("the file is larger than %d bytes", maxBytes)}
	}
	tree, err := DecodeFile(data)
	if err != nil {
		return nil, err
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, &Fault{Path: "$", Message: "must be a JSON object"}
	}
	if err := CheckMembers(tree, t); err != nil {
		var ue *UnknownMemberError
		if errors.As(err, &ue) {
			return nil, &Fault{Path: Rooted(ue.MemberPath()), Message: "unknown member"}
		}
		return nil, &Fault{Path: "$", Message: err.Error()}
	}
	return tree, nil
}

// DecodeFile is Decode for a file: its errors are a *Fault that quotes
// no byte of data (a syntax error says where, SyntaxError.Blind; a
// duplicate member is named by its path).
func DecodeFile(data []byte) (any, error) {
	tree, err := Decode(data)
	var de *DuplicateError
	var se *SyntaxError
	switch {
	case errors.As(err, &de):
		return nil, &Fault{Path: Rooted(de.MemberPath()), Message: "duplicate member"}
	case errors.As(err, &se):
		return nil, &Fault{Path: "$", Message: se.Blind()}
	case err != nil:
		return nil, &Fault{Path: "$", Message: err.Error()}
	}
	return tree, nil
}

// DecodeExact decodes data into v (a pointer to a struct) after
// CheckExact. Errors: a *Fault; a member of the wrong type says which
// JSON type it must be ("$.timeout_ms: must be an integer").
func DecodeExact(data []byte, v any, maxBytes int) error {
	if _, err := CheckExact(data, reflect.TypeOf(v).Elem(), maxBytes); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return TypeFault("$", err)
	}
	return nil
}

// TypeFault turns encoding/json's error for the value at path p into a
// *Fault naming the member and the JSON type it must be.
func TypeFault(p string, err error) *Fault {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return &Fault{Path: p + "." + te.Field, Message: "must be " + JSONType(te.Type)}
	}
	if errors.As(err, &te) {
		return &Fault{Path: p, Message: "must be " + JSONType(te.Type)}
	}
	return &Fault{Path: p, Message: err.Error()}
}

// JSONType names Go type t as JSON does ("a string", "an integer", ...).
func JSONType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return JSONType(t.Elem())
	}
	return t.String()
}
