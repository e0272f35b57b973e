package strictjson

import (
	"fmt"
	"strings"
	"testing"
)

// slowClean is what Clean answers: Decode, then CheckFolded of the value
// or of each element of a top-level array.
func slowClean(b []byte, nested ...string) bool {
	v, err := Decode(b)
	if err != nil {
		return false
	}
	msgs := []any{v}
	if a, ok := v.([]any); ok {
		msgs = a
	}
	for _, m := range msgs {
		if CheckFolded(m, nested...) != nil {
			return false
		}
	}
	return true
}

// TestClean: Clean agrees with Decode and CheckFolded on messages with
// plain names (where it must answer without decoding), and is never true
// where they fail.
func TestClean(t *testing.T) {
	many := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString(`{"params":{`)
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(dup)
		b.WriteString(`"z":1}}`)
		return b.String()
	}
	for _, c := range []struct {
		in   string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"data":"abc"}}}`, true},
		{`  {"a":[1,2,{"b":null,"c":[true,false]}],"d":-1.5e3}  `, true},
		{`[{"id":1,"method":"a"},{"id":2,"method":"b"},3,[{"x":1,"X":2}]]`, true},
		{`"just a string"`, true},
		{`[]`, true},
		{`{}`, true},
		{`{"params":{"arguments":{"x":1,"X":2}}}`, true}, // below params names are exact
		{`{"a":{"b":1,"B":2}}`, true},                    // a is not nested
		{many(40, ""), true},
		{many(40, `"k7":0,`), false},
		{many(40, `"K7":0,`), false},
		{many(120, ""), true}, // up to maxOpenNames, in the cleaner itself
		{many(120, `"k90":0,`), false},
		{many(200, ""), false}, // past them: the caller decodes
		{`{"a":{` + strings.Repeat(`"x":{`, 70) + `"y":1,"y":2` + strings.Repeat(`}`, 70) + `}}`, false},
		{`{"a":{` + strings.Repeat(`"x":{`, 70) + `"y":1,"z":2` + strings.Repeat(`}`, 70) + `}}`, true},
		{`{"method":"a","method":"b"}`, false},
		{`{"method":"a","Method":"b"}`, false},
		{`{"params":{"name":"a","NAME":"b"}}`, false},
		{`{"params":{"arguments":{"x":1,"x":2}}}`, false},
		{`[{"id":1},{"id":2,"ID":3}]`, false},
		{`{"a":[{"x":1,"x":1}]}`, false},
		{`{"a":1,}`, false},
		{`{"a":1} x`, false},
		{``, false},
		{`{"\u0061":1,"a":2}`, false},
		{"{\"\xff\":1,\"\xfe\":2}", false},
	} {
		got := Clean([]byte(c.in), "params")
		if got != c.want {
			t.Errorf("Clean(%.80q) = %v, want %v", c.in, got, c.want)
		}
		if slow := slowClean([]byte(c.in), "params"); got && !slow {
			t.Errorf("Clean(%.80q) is true where Decode and CheckFolded fail", c.in)
		}
	}
}

// TestCleanAllocatesNothing: the scan of a message (the check of every
// /mcp POST) allocates nothing; its names stay in the cleaner.
func TestCleanAllocatesNothing(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"data":"abc","n":[1,2,{"x":true}]},"_meta":{"progressToken":7}}}`)
	if n := testing.AllocsPerRun(100, func() {
		if !Clean(msg, "params") {
			t.Fatal("Clean = false")
		}
	}); n != 0 {
		t.Errorf("Clean allocates %v times per message, want 0", n)
	}
}

// FuzzClean: Clean is never true where Decode and CheckFolded fail, and is
// true where they succeed on input whose member names are plain ASCII
// without escapes.
func FuzzClean(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"data":"abc"}}}`,
		`[{"id":1},{"id":2,"ID":3}]`, `{"params":{"a":1,"A":2}}`, `{"\u0061":1,"a":2}`, `{"a":{"b":1,"b":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, slow := Clean(b, "params"), slowClean(b, "params")
		if got && !slow {
			t.Fatalf("Clean(%q) is true where Decode and CheckFolded fail", b)
		}
		if slow && !got && plainNames(b) {
			t.Fatalf("Clean(%q) is false where Decode and CheckFolded succeed", b)
		}
	})
}

// plainNames reports whether every string of b (names included) is ASCII
// without escapes or control characters.
func plainNames(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// TestMember: the raw value at a path of members of the top-level object.
func TestMember(t *testing.T) {
	b := []byte(` {"jsonrpc":"2.0","params":{"requestId":"x\"y","_meta":{}} , "id" : 17 ,"method":"notifications/cancelled"}`)
	for _, c := range []struct {
		path []string
		want string
	}{
		{[]string{"id"}, `17`},
		{[]string{"method"}, `"notifications/cancelled"`},
		{[]string{"params", "requestId"}, `"x\"y"`},
		{[]string{"params", "_meta"}, `{}`},
		{[]string{"params", "nope"}, ``},
		{[]string{"nope"}, ``},
		{[]string{"id", "x"}, ``},
	} {
		if got := string(Member(b, c.path...)); got != c.want {
			t.Errorf("Member(%v) = %q, want %q", c.path, got, c.want)
		}
	}
	if Member([]byte(`[1]`), "a") != nil || Member([]byte(`{}`), "a") != nil {
		t.Error("Member of an array or an empty object is not nil")
	}
}
