package opentool

import (
	"strconv"
	"strings"
)

// rootPath is the path of faults about the document as a whole (not JSON,
// not an object).
const rootPath = "$"

// jpath is a JSON path kept as a linked list from the leaf up, so that
// walking a deeply nested document costs O(1) per level; it is rendered
// only when a fault or error needs it. The nil *jpath is the empty path.
//
// Rendered form: fixed field names are dotted ("functions[0].name"), map
// keys made only of ASCII letters, digits, '_' and '-' too ("schemas.Id"),
// other keys are quoted (`schemas["a.b"]`, `schemas[""]`).
type jpath struct {
	parent *jpath
	seg    string // field name or key
	kind   segKind
	idx    int
}

type segKind uint8

const (
	segField segKind = iota // a fixed field name of the spec, never quoted
	segKey                  // a user-chosen map key, quoted when not simple
	segIndex                // an array index
)

// dollarPath renders as "$"; it is used only for faults about the root.
var dollarPath = &jpath{seg: rootPath}

// field returns p + "." + name for a fixed field name.
func (p *jpath) field(name string) *jpath { return &jpath{parent: p, seg: name, kind: segField} }

// key returns p + ".key" or p + `["key"]` for a map key.
func (p *jpath) key(key string) *jpath { return &jpath{parent: p, seg: key, kind: segKey} }

// index returns p + "[i]".
func (p *jpath) index(i int) *jpath { return &jpath{parent: p, kind: segIndex, idx: i} }

// jsKey returns p + key for a JSON Schema keyword or pointer token: keywords
// such as "$defs" and "$ref" stay dotted, others are keys.
func (p *jpath) jsKey(key string) *jpath {
	if len(key) > 1 && key[0] == '$' && isSimpleKey(key[1:]) {
		return p.field(key)
	}
	return p.key(key)
}

// String renders the path ("" for the empty path).
func (p *jpath) String() string {
	var segs []*jpath
	for q := p; q != nil; q = q.parent {
		segs = append(segs, q)
	}
	var b strings.Builder
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		switch {
		case s.kind == segIndex:
			b.WriteString("[" + strconv.Itoa(s.idx) + "]")
		case s.kind == segKey && !isSimpleKey(s.seg):
			b.WriteString("[" + strconv.Quote(s.seg) + "]")
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.seg)
		}
	}
	return b.String()
}

// orRoot renders p, or "$" for the empty path.
func (p *jpath) orRoot() string {
	if s := p.String(); s != "" {
		return s
	}
	return rootPath
}

func isSimpleKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		if !isNameByte(key[i]) {
			return false
		}
	}
	return true
}

// isNameByte reports whether c is in [a-zA-Z0-9_-].
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ValidFunctionName reports whether name matches ^[a-zA-Z0-9_-]{1,64}$, the
// rule of spec 1.1.0 "Function Object" (name).
func ValidFunctionName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isNameByte(name[i]) {
			return false
		}
	}
	return true
}
