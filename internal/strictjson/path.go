package strictjson

import (
	"strconv"
	"strings"
)

// segment is one step of a JSON path: a member name or an array index.
type segment struct {
	key     string
	index   int
	isIndex bool
}

// render writes the path of segs, given leaf first, root-first: "a.b",
// "tags[2]", `["b c"].x`; "" for no segments.
func render(segs []segment) string {
	var b strings.Builder
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if s.isIndex {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		WriteKey(&b, s.key)
	}
	return b.String()
}

// AppendKey returns path p with member key appended, as WriteKey writes
// it: AppendKey("a", "b") is "a.b", AppendKey("a", "b c") is `a["b c"]`.
func AppendKey(p, key string) string {
	var b strings.Builder
	b.WriteString(p)
	WriteKey(&b, key)
	return b.String()
}

// WriteKey appends member key to the path in b: ".key" ("key" at the
// start of the path), or `["key"]` when key is empty or has a byte other
// than ASCII letters, digits, '_' and '-'. argcheck's fault paths are
// written the same way.
func WriteKey(b *strings.Builder, key string) {
	if !plainKey(key) {
		b.WriteString("[" + strconv.Quote(key) + "]")
		return
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
}

func plainKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
