package strictjson

import "bytes"

// Clean reports whether b is exactly one JSON value with no member given
// twice in any object (Decode would succeed) and, in the top-level object
// (or each object of a top-level array) and in its members named in
// nested, no two member names that differ only in case (CheckFolded
// would succeed): the answer of
//
//	v, err := Decode(b); err == nil && CheckFolded(v, nested...) == nil
//
// (for a top-level array, CheckFolded of each element), found by one scan
// that builds no value. It may also report false when it cannot tell
// without decoding: a member name with an escape, or a name that is not
// ASCII where names are compared ignoring case, or more than
// maxOpenNames names in the objects open at one point. A caller that gets false
// decodes with Decode and CheckFolded for the answer and the error.
func Clean(b []byte, nested ...string) bool {
	c := cleaner{d: decoder{data: b, skip: true}, nested: nested}
	return c.clean(none)
}

// Message is what CleanMessage's scan keeps of a top-level object, a
// JSON-RPC message: the raw JSON value of its members jsonrpc, id, method
// and params and, when params is an object, of params' members _meta,
// task and requestId; each nil when absent, and each what Member gives
// for its path on a body Clean passed (Member(b, "params", "_meta"), ...).
// The values alias b.
type Message struct {
	JSONRPC, ID, Method, Params []byte
	Meta, Task, RequestID       []byte
}

// CleanMessage is Clean(b, "params") and, when b is an object that passes,
// its Message, read by the same scan (nothing allocated, no member read
// twice). For a batch, or a body that does not pass, the Message is
// empty.
func CleanMessage(b []byte) (Message, bool) {
	c := cleaner{d: decoder{data: b, skip: true}, nested: messageNested}
	if !c.clean(top) {
		return Message{}, false
	}
	v := func(i member) []byte {
		if s := c.kept[i]; s.end > s.start {
			return b[s.start:s.end]
		}
		return nil
	}
	return Message{
		JSONRPC: v(jsonrpcMember), ID: v(idMember), Method: v(methodMember), Params: v(paramsMember),
		Meta: v(metaMember), Task: v(taskMember), RequestID: v(requestIDMember),
	}, true
}

// messageNested is the members of a message whose names CleanMessage
// compares ignoring case too.
var messageNested = []string{"params"}

// clean is Clean's scan; rec is where a top-level object's members are
// kept in c.kept (none, or top for CleanMessage).
func (c *cleaner) clean(rec level) bool {
	b := c.d.data
	c.d.skipSpace()
	if c.d.pos >= len(b) {
		return false
	}
	ok := false
	switch b[c.d.pos] {
	case '{':
		ok = c.object(true, true, rec)
	case '[':
		ok = c.batch()
	default:
		_, err := c.d.value()
		ok = err == nil
	}
	if !ok {
		return false
	}
	c.d.skipSpace()
	return c.d.pos == len(b)
}

// cleaner is the state of one Clean call.
type cleaner struct {
	d      decoder
	nested []string
	// kept holds the spans of the values CleanMessage keeps (offsets, not
	// slices: a slice stored through the cleaner's pointer would move
	// the caller's nested names to the heap), indexed by member; an
	// empty span is a member absent.
	kept [members]span
	// keys holds the member names of the objects open around the scan,
	// as offsets into d.data, innermost last; each object uses the names
	// from its own start.
	keys keyStack
}

// keyStack is a stack of at most maxOpenNames names, kept in the
// cleaner itself so that a scan allocates nothing (a slice appended to
// through the cleaner's pointer, or one it holds, would be moved to the
// heap, with the caller's nested names).
type keyStack struct {
	names [maxOpenNames]span
	n     int
}

// maxOpenNames is the most member names the objects open around Clean's
// scan may have together (2 KiB of offsets); past them Clean reports
// false and its caller decodes.
const maxOpenNames = 128

// push adds k on top; false when the stack is full.
func (s *keyStack) push(k span) bool {
	if s.n == len(s.names) {
		return false
	}
	s.names[s.n] = k
	s.n++
	return true
}

// level is which object's members a scan keeps in cleaner.kept: none, the
// message's (top) or its params' (params).
type level int

const (
	none level = iota
	top
	params
)

// member is a member CleanMessage keeps (its index in cleaner.kept).
type member int

const (
	jsonrpcMember member = iota
	idMember
	methodMember
	paramsMember
	metaMember
	taskMember
	requestIDMember
	members // how many
)

// keep keeps the span v of the value of member name of an object at level
// rec, when it is one Message holds.
func (c *cleaner) keep(rec level, name []byte, v span) {
	i := member(-1)
	switch rec {
	case top:
		switch string(name) {
		case "jsonrpc":
			i = jsonrpcMember
		case "id":
			i = idMember
		case "method":
			i = methodMember
		case "params":
			i = paramsMember
		}
	case params:
		switch string(name) {
		case "_meta":
			i = metaMember
		case "task":
			i = taskMember
		case "requestId":
			i = requestIDMember
		}
	}
	if i >= 0 {
		c.kept[i] = v
	}
}

// span is the content of a string: data[start:end], quotes excluded.
type span struct{ start, end int }

// smallObject is the most members an object may have for its names to be
// compared pairwise; a larger one uses a map.
const smallObject = 16

// batch scans a top-level array: each element that is an object is a
// message, its names and those of its nested members compared ignoring
// case.
func (c *cleaner) batch() bool {
	d := &c.d
	if d.open() != nil {
		return false
	}
	if d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return true
	}
	for {
		var ok bool
		if d.data[d.pos] == '{' {
			ok = c.object(true, true, none)
		} else {
			ok = c.value()
		}
		if !ok {
			return false
		}
		end, err := d.next(']', "")
		if err != nil {
			return false
		}
		if end {
			return true
		}
	}
}

// value scans the value at d.pos.
func (c *cleaner) value() bool {
	d := &c.d
	if d.pos >= len(d.data) {
		return false
	}
	switch d.data[d.pos] {
	case '{':
		return c.object(false, false, none)
	case '[':
		if d.open() != nil {
			return false
		}
		if d.data[d.pos] == ']' {
			d.pos++
			d.depth--
			return true
		}
		for {
			if !c.value() {
				return false
			}
			end, err := d.next(']', "")
			if err != nil {
				return false
			}
			if end {
				return true
			}
		}
	}
	_, err := d.value()
	return err == nil
}

// object scans the object at d.pos; folded compares its names ignoring
// case, and message (a message object) those of its members named in
// c.nested too; the members of an object at level rec are kept in c.kept
// (keep), and with rec top those of its params too.
func (c *cleaner) object(folded, message bool, rec level) bool {
	d := &c.d
	if d.open() != nil {
		return false
	}
	base := c.keys.n
	defer func() { c.keys.n = base }()
	var seen map[string]struct{} // past smallObject members
	if d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return true
	}
	for {
		if d.data[d.pos] != '"' {
			return false
		}
		start := d.pos + 1
		if _, err := d.str(); err != nil {
			return false
		}
		k := span{start, d.pos - 1}
		name := d.data[k.start:k.end]
		if !plain(name) || folded && !ascii(name) {
			return false // an escape, or invalid UTF-8 that decodes to U+FFFD
		}
		n := c.keys.n - base
		switch {
		case n < smallObject:
			for i := base; i < c.keys.n; i++ {
				o := c.keys.names[i]
				if o2 := d.data[o.start:o.end]; bytes.Equal(o2, name) || folded && bytes.EqualFold(o2, name) {
					return false
				}
			}
		default:
			if seen == nil {
				seen = make(map[string]struct{}, 2*smallObject)
				for i := base; i < c.keys.n; i++ {
					seen[c.key(c.keys.names[i], folded)] = struct{}{}
				}
			}
			key := c.key(k, folded)
			if _, dup := seen[key]; dup {
				return false
			}
			seen[key] = struct{}{}
		}
		if !c.keys.push(k) {
			return false // too many names to hold: the caller decodes
		}
		if d.expect(':', "") != nil {
			return false
		}
		d.skipSpace()
		ok, start := false, d.pos
		if message && d.pos < len(d.data) && d.data[d.pos] == '{' && c.isNested(name) {
			// A nested object compares its own names ignoring case;
			// below it, names are exact.
			inner := none
			if rec == top && string(name) == "params" {
				inner = params
			}
			ok = c.object(true, false, inner)
		} else {
			ok = c.value()
		}
		if !ok {
			return false
		}
		if rec != none {
			c.keep(rec, name, span{start, d.pos})
		}
		end, err := d.next('}', "")
		if err != nil {
			return false
		}
		if end {
			return true
		}
	}
}

// isNested reports whether name is one of c.nested.
func (c *cleaner) isNested(name []byte) bool {
	for _, n := range c.nested {
		if string(name) == n {
			return true
		}
	}
	return false
}

// key is the map key of the name at s: as is, or lower-cased (ASCII) when
// names are compared ignoring case.
func (c *cleaner) key(s span, folded bool) string {
	name := c.d.data[s.start:s.end]
	if folded {
		return string(bytes.ToLower(name))
	}
	return string(name)
}

// ascii reports whether s is all ASCII.
func ascii(s []byte) bool {
	for _, b := range s {
		if b >= 0x80 {
			return false
		}
	}
	return true
}

// Member returns the raw JSON value of the member of the top-level object
// of b at path (each element a member name, exact, without escapes), or
// nil when there is none or b is not an object. b must be valid JSON
// (Clean reported true); the result aliases b.
func Member(b []byte, path ...string) []byte {
	d := decoder{data: b, skip: true}
	for _, name := range path {
		d.skipSpace()
		if d.pos >= len(b) || b[d.pos] != '{' || d.open() != nil || b[d.pos] == '}' {
			return nil
		}
		found := false
		for !found {
			start := d.pos + 1
			if _, err := d.str(); err != nil {
				return nil
			}
			found = string(b[start:d.pos-1]) == name
			if d.expect(':', "") != nil {
				return nil
			}
			d.skipSpace()
			if found {
				break
			}
			if _, err := d.value(); err != nil {
				return nil
			}
			if end, err := d.next('}', ""); err != nil || end {
				return nil
			}
		}
	}
	d.skipSpace()
	start := d.pos
	if _, err := d.value(); err != nil {
		return nil
	}
	return b[start:d.pos]
}

// Members calls f with the name and the raw JSON value of each member of
// the object b, in order, until f returns false, and reports whether b is
// exactly one object, of valid JSON syntax, whose every member f took
// (true for {}). A name is as written between its quotes, escapes
// included. Members looks for no duplicate member (Clean does): f sees
// each as it comes. name and value alias b.
func Members(b []byte, f func(name, value []byte) bool) bool {
	d := decoder{data: b, skip: true}
	d.skipSpace()
	if d.pos >= len(b) || b[d.pos] != '{' || d.open() != nil {
		return false
	}
	if b[d.pos] == '}' {
		d.pos++
		return d.atEnd()
	}
	for {
		if b[d.pos] != '"' {
			return false
		}
		start := d.pos + 1
		if _, err := d.str(); err != nil {
			return false
		}
		name := b[start : d.pos-1]
		if d.expect(':', "") != nil {
			return false
		}
		d.skipSpace()
		v := d.pos
		if _, err := d.value(); err != nil || !f(name, b[v:d.pos]) {
			return false
		}
		if end, err := d.next('}', ""); err != nil || end {
			return err == nil && d.atEnd()
		}
	}
}

// Elements calls f with the raw JSON value of each element of the array
// b, in order, until f returns false, and reports whether b is exactly
// one array, of valid JSON syntax, whose every element f took (true for
// []). Each value aliases b.
func Elements(b []byte, f func(value []byte) bool) bool {
	d := decoder{data: b, skip: true}
	d.skipSpace()
	if d.pos >= len(b) || b[d.pos] != '[' || d.open() != nil {
		return false
	}
	if b[d.pos] == ']' {
		d.pos++
		return d.atEnd()
	}
	for {
		v := d.pos
		if _, err := d.value(); err != nil || !f(b[v:d.pos]) {
			return false
		}
		if end, err := d.next(']', ""); err != nil || end {
			return err == nil && d.atEnd()
		}
	}
}

// atEnd reports whether only whitespace follows d.pos.
func (d *decoder) atEnd() bool {
	d.skipSpace()
	return d.pos == len(d.data)
}
