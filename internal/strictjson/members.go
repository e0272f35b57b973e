package strictjson

import (
	"cmp"
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// UnknownMemberError is the error of CheckMembers: an object member whose
// name is not exactly the JSON name of a field of the struct the object
// decodes into.
type UnknownMemberError struct {
	// Path is the JSON path of the object that has the member, "" for the
	// top-level value, written as DuplicateError.Path is.
	Path string
	// Name is the member name as sent (unescaped).
	Name string
	// Field is the JSON name of the field that Name matches when case is
	// ignored (the field encoding/json would have filled), or "" when
	// there is none.
	Field string
}

// MemberPath returns the path of the member itself: Path with Name
// appended ("origin.X", "MODE").
func (e *UnknownMemberError) MemberPath() string { return AppendKey(e.Path, e.Name) }

// Error returns `unknown member "X" in object origin` or, when a field
// matches but for case, `unknown member "MODE" (member names are
// case-sensitive: the field is "mode")`.
func (e *UnknownMemberError) Error() string {
	msg := "unknown member " + strconv.Quote(e.Name)
	if e.Path != "" {
		msg += " in object " + e.Path
	}
	if e.Field != "" {
		msg += " (member names are case-sensitive: the field is " + strconv.Quote(e.Field) + ")"
	}
	return msg
}

// CheckMembers checks that every object of v, a tree from Decode, names
// only members that are exactly the JSON names of the struct fields it
// would be decoded into by encoding/json as Go type t. Names follow
// encoding/json: the json tag's name or else the field name, fields of
// embedded structs promoted (the shallowest, or the only tagged one, of
// equal names wins; ambiguous names are dropped), unexported fields and
// `json:"-"` skipped; options such as omitempty do not matter.
//
// It walks v and t together: pointers to their element, slices and arrays
// to each element, maps to each value (any key is allowed). Values of
// interface types, of types that decode themselves (json.Unmarshaler,
// encoding.TextUnmarshaler, e.g. time.Time and json.RawMessage) and
// values whose JSON type does not fit t (encoding/json reports those) are
// not looked into.
//
// It returns nil or an *UnknownMemberError. When there are several, the
// one returned is chosen by member name, smallest first, at each level
// (the same one every time).
func CheckMembers(v any, t reflect.Type) error {
	if e := check(v, t); e != nil {
		e.Path = render(e.segs)
		return &e.UnknownMemberError
	}
	return nil
}

// unknown is an *UnknownMemberError with its path still in segments.
type unknown struct {
	UnknownMemberError
	segs []segment // leaf first
}

// check is CheckMembers without the path rendering.
func check(v any, t reflect.Type) *unknown {
	if v == nil {
		return nil
	}
	info := infoOf(t)
	if info.trivial {
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return check(v, t.Elem())
	case reflect.Struct:
		if m, ok := v.(map[string]any); ok {
			return checkStruct(m, info)
		}
	case reflect.Map:
		if m, ok := v.(map[string]any); ok {
			return checkMap(m, t.Elem())
		}
	case reflect.Slice, reflect.Array:
		if a, ok := v.([]any); ok {
			return checkArray(a, t.Elem())
		}
	}
	return nil
}

// checkStruct checks the members of object m against struct fields.
func checkStruct(m map[string]any, info *typeInfo) *unknown {
	var first *unknown
	firstKey := ""
	for k, cv := range m {
		if first != nil && k >= firstKey {
			continue
		}
		ft, ok := info.fields[k]
		if !ok {
			first, firstKey = &unknown{UnknownMemberError: UnknownMemberError{Name: k, Field: info.folded(k)}}, k
			continue
		}
		if e := check(cv, ft); e != nil {
			e.segs = append(e.segs, segment{key: k})
			first, firstKey = e, k
		}
	}
	return first
}

// checkMap checks the values of object m against map element type elem.
func checkMap(m map[string]any, elem reflect.Type) *unknown {
	if infoOf(elem).trivial {
		return nil
	}
	var first *unknown
	firstKey := ""
	for k, cv := range m {
		if first != nil && k >= firstKey {
			continue
		}
		if e := check(cv, elem); e != nil {
			e.segs = append(e.segs, segment{key: k})
			first, firstKey = e, k
		}
	}
	return first
}

// checkArray checks the elements of a against element type elem.
func checkArray(a []any, elem reflect.Type) *unknown {
	if infoOf(elem).trivial {
		return nil
	}
	for i, cv := range a {
		if e := check(cv, elem); e != nil {
			e.segs = append(e.segs, segment{index: i, isIndex: true})
			return e
		}
	}
	return nil
}

// typeInfo is what check needs to know of a type, computed once.
type typeInfo struct {
	// trivial: no value of the type can hold a struct whose member
	// names matter (basic kinds, interfaces, types that decode
	// themselves, and containers of those).
	trivial bool
	// fields maps the JSON names of a struct's fields to their types.
	fields map[string]reflect.Type
}

// folded returns the field name that equals name but for case (the
// smallest when several do), or "".
func (info *typeInfo) folded(name string) string {
	best := ""
	for f := range info.fields {
		if strings.EqualFold(f, name) && (best == "" || f < best) {
			best = f
		}
	}
	return best
}

var (
	infoCache       sync.Map // reflect.Type -> *typeInfo
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// infoOf returns the cached typeInfo of t.
func infoOf(t reflect.Type) *typeInfo {
	if v, ok := infoCache.Load(t); ok {
		return v.(*typeInfo)
	}
	info := &typeInfo{trivial: isTrivial(t, map[reflect.Type]bool{})}
	if t.Kind() == reflect.Struct && !info.trivial {
		info.fields = jsonFields(t)
	}
	v, _ := infoCache.LoadOrStore(t, info)
	return v.(*typeInfo)
}

// isTrivial reports whether values of t need no member check; visiting
// holds the types being looked at (a recursive type is not trivial).
func isTrivial(t reflect.Type, visiting map[reflect.Type]bool) bool {
	if decodesItself(t) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		return false
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		if visiting[t] {
			return false
		}
		visiting[t] = true
		return isTrivial(t.Elem(), visiting)
	}
	return true
}

// decodesItself reports whether encoding/json hands JSON values of type t
// to the type's own method.
func decodesItself(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(unmarshalerType) || pt.Implements(textType)
}

// jsonFields returns the fields encoding/json decodes into for struct t,
// by JSON name: a port of the name rules of its typeFields.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	var fields []field
	next := []reflect.Type{t}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for depth := 1; len(next) > 0; depth++ {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, st := range current {
			if visited[st] {
				continue
			}
			visited[st] = true
			for i := range st.NumField() {
				sf := st.Field(i)
				name, ok := jsonName(sf)
				if !ok {
					continue
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					if nextCount[ft]++; nextCount[ft] == 1 {
						next = append(next, ft)
					}
					continue
				}
				f := field{name: name, typ: sf.Type, depth: depth, tagged: name != ""}
				if name == "" {
					f.name = sf.Name
				}
				fields = append(fields, f)
				if count[st] > 1 { // embedded twice: make the name ambiguous
					fields = append(fields, f)
				}
			}
		}
	}
	return dominantFields(fields)
}

// field is a struct field as encoding/json names it.
type field struct {
	name   string
	typ    reflect.Type
	depth  int  // 1 for a field of the struct itself, +1 per embedding
	tagged bool // the name comes from the json tag
}

// dominantFields keeps, of fields of the same name, the one that is
// shallowest, tagged if several are; the name is dropped when two are
// equally shallow and equally tagged (Go's embedding rules with JSON
// tags, as encoding/json applies them).
func dominantFields(fields []field) map[string]reflect.Type {
	best := map[string][]field{}
	for _, f := range fields {
		best[f.name] = append(best[f.name], f)
	}
	out := make(map[string]reflect.Type, len(best))
	for name, fs := range best {
		slices.SortStableFunc(fs, func(a, b field) int {
			if c := cmp.Compare(a.depth, b.depth); c != 0 {
				return c
			}
			switch {
			case a.tagged == b.tagged:
				return 0
			case a.tagged:
				return -1
			}
			return 1
		})
		if len(fs) > 1 && fs[0].depth == fs[1].depth && fs[0].tagged == fs[1].tagged {
			continue
		}
		out[name] = fs[0].typ
	}
	return out
}

// jsonName returns the name of sf's json tag ("" when it has none or an
// invalid one) and whether encoding/json looks at sf at all.
func jsonName(sf reflect.StructField) (string, bool) {
	if sf.Anonymous {
		t := sf.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if !sf.IsExported() && t.Kind() != reflect.Struct {
			return "", false
		}
	} else if !sf.IsExported() {
		return "", false
	}
	tag := sf.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if !validTag(name) {
		name = ""
	}
	return name, true
}

// validTag reports whether encoding/json takes name from a json tag.
func validTag(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// FoldedDuplicateError is the error of CheckFolded: an object of an
// envelope has two members whose names differ only in case ("tool_id"
// and "TOOL_ID"), which encoding/json would take as one member, the last
// one winning.
type FoldedDuplicateError struct {
	// Path is the JSON path of the object, "" for the top level.
	Path string
	// First and Second are the two names, in byte order (a decoded
	// object has no document order).
	First, Second string
}

// Error returns `members "TOOL_ID" and "tool_id" of object request
// differ only in case`.
func (e *FoldedDuplicateError) Error() string {
	msg := "members " + strconv.Quote(e.First) + " and " + strconv.Quote(e.Second)
	if e.Path != "" {
		msg += " of object " + e.Path
	}
	return msg + " differ only in case"
}

// CheckFolded checks the objects of an envelope, a tree from Decode, for
// member names that differ only in case (Decode already refuses names
// given twice exactly): the top-level object, and the object members of
// it named in nested ("request", "params"), one level down. Objects
// below them (arguments) are the validator's: their names are compared
// exactly there. Values that are not objects are skipped.
func CheckFolded(v any, nested ...string) error {
	if err := foldedIn(v, ""); err != nil {
		return err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	for _, name := range nested {
		if err := foldedIn(obj[name], name); err != nil {
			return err
		}
	}
	return nil
}

// foldedIn checks one object (at path) for names that differ only in
// case.
func foldedIn(v any, path string) error {
	obj, ok := v.(map[string]any)
	if !ok || len(obj) < 2 {
		return nil
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	seen := make(map[string]string, len(names))
	for _, k := range names {
		f := foldKey(k)
		if prev, dup := seen[f]; dup {
			return &FoldedDuplicateError{Path: path, First: prev, Second: k}
		}
		seen[f] = k
	}
	return nil
}

// foldKey returns a key equal for two names exactly when bytes.EqualFold
// (the matching encoding/json uses) says they are equal: each rune is
// replaced by the smallest rune of its simple case-folding orbit, so that
// "ſ" (U+017F) and "s", or "K" (U+212A) and "k", are one name too.
func foldKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}
