package strictjson

import (
	"fmt"
	"reflect"
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
	if n := testing.AllocsPerRun(100, func() {
		if m, ok := CleanMessage(msg); !ok || m.Meta == nil {
			t.Fatal("CleanMessage = false or no _meta")
		}
	}); n != 0 {
		t.Errorf("CleanMessage allocates %v times per message, want 0", n)
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

// TestMembers: Members gives each member of an object in order, names as
// written and values raw, stops at the first f refuses, and reports false
// for what is not one object of valid syntax (trailing data included).
func TestMembers(t *testing.T) {
	b := []byte(` { "name" : "a\"b" ,"arguments":{"x":[1, {"y":null}]}, "n":-1.5e3,"":true}`)
	var got []string
	if !Members(b, func(name, value []byte) bool {
		got = append(got, string(name)+"="+string(value))
		return true
	}) {
		t.Fatal("Members reported false for an object")
	}
	want := []string{`name="a\"b"`, `arguments={"x":[1, {"y":null}]}`, `n=-1.5e3`, `=true`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("members %q, want %q", got, want)
	}
	n := 0
	if Members(b, func(name, _ []byte) bool { n++; return string(name) != "arguments" }) || n != 2 {
		t.Errorf("f refusing the 2nd member: true or %d calls, want false after 2", n)
	}
	if !Members([]byte(" {\n} "), func([]byte, []byte) bool { t.Error("f called for {}"); return true }) {
		t.Error("Members({}) = false")
	}
	for _, s := range []string{`[1]`, `"x"`, `3`, `null`, ``, `{} {}`, `{"a":1}x`, `{"a":1`, `{a:1}`, `{"a":1,}`, `{"a" 1}`, `{"a":tru}`, `{"a":"\x"}`} {
		if Members([]byte(s), func([]byte, []byte) bool { return true }) {
			t.Errorf("Members(%q) = true, want false", s)
		}
	}
}

// TestElements: Elements gives each element of an array in order, raw,
// stops at the first f refuses, and reports false for what is not one
// array of valid syntax (trailing data included).
func TestElements(t *testing.T) {
	b := []byte(` [ 1 , "a\"]" ,{"x":[2]}, [] ,null]`)
	var got []string
	if !Elements(b, func(v []byte) bool { got = append(got, string(v)); return true }) {
		t.Fatal("Elements reported false for an array")
	}
	if want := []string{`1`, `"a\"]"`, `{"x":[2]}`, `[]`, `null`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("elements %q, want %q", got, want)
	}
	n := 0
	if Elements(b, func([]byte) bool { n++; return n < 3 }) || n != 3 {
		t.Errorf("f refusing the 3rd element: true or %d calls, want false after 3", n)
	}
	if !Elements([]byte(`[ ]`), func([]byte) bool { t.Error("f called for []"); return true }) {
		t.Error("Elements([]) = false")
	}
	for _, s := range []string{`{}`, `"x"`, `3`, `null`, ``, `[] []`, `[1]x`, `[1`, `[1,]`, `[1 2]`, `[nul]`} {
		if Elements([]byte(s), func([]byte) bool { return true }) {
			t.Errorf("Elements(%q) = true, want false", s)
		}
	}
}

// memberMessage is the Message of b as Member reads it, member by member.
func memberMessage(b []byte) Message {
	return Message{
		JSONRPC: Member(b, "jsonrpc"), ID: Member(b, "id"), Method: Member(b, "method"), Params: Member(b, "params"),
		Meta: Member(b, "params", "_meta"), Task: Member(b, "params", "task"), RequestID: Member(b, "params", "requestId"),
	}
}

// checkMessage fails t unless CleanMessage(b) answers as Clean(b,
// "params") does and, when it passes, its Message is Member's member for
// member (nil for a batch, which Member reads as no object).
func checkMessage(t *testing.T, b []byte) {
	t.Helper()
	got, ok := CleanMessage(b)
	if ok != Clean(b, "params") {
		t.Fatalf("CleanMessage(%.80q) = %v, Clean says %v", b, ok, !ok)
	}
	if !ok {
		if !reflect.DeepEqual(got, Message{}) {
			t.Fatalf("CleanMessage(%.80q) failed with a Message: %+v", b, got)
		}
		return
	}
	want := memberMessage(b)
	for _, f := range []struct {
		name      string
		got, want []byte
	}{
		{"jsonrpc", got.JSONRPC, want.JSONRPC}, {"id", got.ID, want.ID}, {"method", got.Method, want.Method},
		{"params", got.Params, want.Params}, {"_meta", got.Meta, want.Meta}, {"task", got.Task, want.Task},
		{"requestId", got.RequestID, want.RequestID},
	} {
		if string(f.got) != string(f.want) || (f.got == nil) != (f.want == nil) {
			t.Errorf("CleanMessage(%.80q): %s = %q, Member gives %q", b, f.name, f.got, f.want)
		}
	}
}

// TestCleanMessage: CleanMessage keeps what Member reads of each message.
func TestCleanMessage(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"data":"abc"}}}`,
		` { "method" : "tools/call" , "id" : "a b" , "params" : { "_meta" : { "progressToken" : 7 } , "task" : {"ttl":1} } , "jsonrpc" : "2.0" } `,
		`{"method":"notifications/cancelled","params":{"requestId":-12.5e1,"reason":"x"}}`,
		`{"id":null,"method":"m","params":[1,{"_meta":2}]}`,
		`{"params":"s","id":{"x":[1,2]}}`,
		`{"params":{"arguments":{"_meta":1,"task":2,"requestId":3}}}`, // below params: not params' own
		`{"x":{"params":{"_meta":1},"id":3}}`,                         // nested: not the message's
		`{"params":{}}`, `{}`, `[{"id":1,"method":"a"}]`, `"s"`, `3`,
		`{"id":1,"ID":2}`, `{"params":{"task":1,"Task":2}}`, `{"\u0069d":1}`,
	} {
		checkMessage(t, []byte(in))
	}
}

// FuzzCleanMessage checks CleanMessage against Clean and Member on any
// input.
func FuzzCleanMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","_meta":{"a":1},"task":{}}}`))
	f.Add([]byte(`{"method":"notifications/cancelled","params":{"requestId":"x"}}`))
	f.Add([]byte(`[{"id":1}]`))
	f.Fuzz(func(t *testing.T, b []byte) { checkMessage(t, b) })
}
