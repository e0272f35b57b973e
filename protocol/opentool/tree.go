package opentool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// kind is the JSON type of a node of the generic tree ValidateJSON walks.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// node is one JSON value of a decoded document. Unlike a map[string]any it
// keeps the byte offset of the value (to sort faults in document order), the
// order of object members, and number literals as written.
//
// Duplicate object keys keep the last value, as encoding/json does.
type node struct {
	kind kind
	off  int64            // byte offset just before the value
	b    bool             // kindBool
	s    string           // kindString: the value; kindNumber: the literal
	arr  []*node          // kindArray
	keys []string         // kindObject: member names, first-appearance order
	obj  map[string]*node // kindObject
}

// get returns the member key of an object node, or nil when n is not an
// object, the member is absent, or its value is null: for every optional
// field of the spec, null means absent.
func (n *node) get(key string) *node {
	if n == nil || n.kind != kindObject {
		return nil
	}
	c := n.obj[key]
	if c == nil || c.kind == kindNull {
		return nil
	}
	return c
}

// raw returns n as compact JSON: object members in first-appearance order,
// numbers as written (nil for nil).
func (n *node) raw() json.RawMessage {
	if n == nil {
		return nil
	}
	var b bytes.Buffer
	n.write(&b)
	return b.Bytes()
}

// write appends the JSON of n to b.
func (n *node) write(b *bytes.Buffer) {
	switch n.kind {
	case kindNull:
		b.WriteString("null")
	case kindBool:
		b.WriteString(strconv.FormatBool(n.b))
	case kindNumber:
		b.WriteString(n.s)
	case kindString:
		q, _ := json.Marshal(n.s) // a string always encodes
		b.Write(q)
	case kindArray:
		b.WriteByte('[')
		for i, c := range n.arr {
			if i > 0 {
				b.WriteByte(',')
			}
			c.write(b)
		}
		b.WriteByte(']')
	case kindObject:
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			q, _ := json.Marshal(k)
			b.Write(q)
			b.WriteByte(':')
			n.obj[k].write(b)
		}
		b.WriteByte('}')
	}
}

// decodeTree decodes data into a node tree. A document that is not exactly
// one JSON value yields a Fault at path "$" whose message carries the byte
// offset of the syntax error.
func decodeTree(data []byte) (*node, *Fault) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, &Fault{Path: rootPath, Message: fmt.Sprintf("invalid JSON at byte offset %d: %s", se.Offset, se.Error())}
		case err != nil:
			return nil, &Fault{Path: rootPath, Message: "invalid JSON: " + err.Error()}
		default:
			return nil, &Fault{Path: rootPath, Message: "invalid JSON"}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec)
	if err == nil {
		if _, err = dec.Token(); err == io.EOF {
			return n, nil
		} else if err == nil {
			err = errors.New("trailing data after top-level value")
		}
	}
	// json.Valid accepted data, so this is not expected to happen.
	return nil, &Fault{Path: rootPath, Message: fmt.Sprintf("invalid JSON at byte offset %d: %s", dec.InputOffset(), err)}
}

// readNode reads one value from dec. The nesting depth is bounded by the
// 10000 levels json.Valid accepts.
func readNode(dec *json.Decoder) (*node, error) {
	off := dec.InputOffset()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: kindNull, off: off}, nil
	case bool:
		return &node{kind: kindBool, off: off, b: t}, nil
	case json.Number:
		return &node{kind: kindNumber, off: off, s: string(t)}, nil
	case string:
		return &node{kind: kindString, off: off, s: t}, nil
	case json.Delim:
		switch t {
		case '[':
			n := &node{kind: kindArray, off: off}
			for dec.More() {
				c, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, c)
			}
			_, err := dec.Token() // ']'
			return n, err
		case '{':
			n := &node{kind: kindObject, off: off, obj: map[string]*node{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("unexpected object key %v", kt)
				}
				c, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := n.obj[key]; !dup {
					n.keys = append(n.keys, key)
				}
				n.obj[key] = c
			}
			_, err := dec.Token() // '}'
			return n, err
		}
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// isIntegerLiteral reports whether the JSON number literal lit denotes an
// integer (1, -0, 1.0, 1e3 and 100e-2 do; 1.5 and 1e-3 do not). It works on
// the digits, so it is exact for any literal.
func isIntegerLiteral(lit string) bool {
	mant, exp := strings.TrimPrefix(lit, "-"), 0
	if i := strings.IndexAny(mant, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(mant[i+1:], "+"))
		if err != nil { // exponent beyond int: only its sign matters
			e = 1 << 30
			if strings.HasPrefix(mant[i+1:], "-") {
				e = -e
			}
		}
		mant, exp = mant[:i], e
	}
	frac := ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		mant, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(mant+frac, "0")
	if digits == "" {
		return true // zero
	}
	trimmed := strings.TrimRight(digits, "0")
	// value = trimmed × 10^(exp - len(frac) + trailing zeros)
	return int64(exp)-int64(len(frac))+int64(len(digits)-len(trimmed)) >= 0
}

// parseNumber returns the float64 of a JSON number literal, and false when it
// is beyond the float64 range (json.Unmarshal would refuse it).
func parseNumber(lit string) (float64, bool) {
	f, err := strconv.ParseFloat(lit, 64)
	return f, err == nil
}
