package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// stdDecode decodes b as encoding/json does with UseNumber, refusing
// trailing data: the reference Decode must agree with.
func stdDecode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

func TestDecodeShapes(t *testing.T) {
	for _, in := range []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `123456789012345678901234567890`,
		` {"a" : [1, "x", null, true, {"b": {}}], "c": -2.5E+3} `,
		`"plain"`, `"é ☃ 😀"`, `"\u00e9\n\t\"\\\/\b\f\r"`, `"\ud83d\ude00"`,
		`{"":1,"a b":{"\u0061":2}}`,
		"\"a\xffb\xc3\"", "\"\xed\xa0\x80\"", // invalid UTF-8, an encoded surrogate
		`"\ud800"`, `"\udc00\ud800x"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`,
		`"\uFFFD"`, "\"\xef\xbf\xbd\"",
		"\"" + strings.Repeat("abcdefgh", 9) + "é" + strings.Repeat("x", 13) + "\"",
		"\"" + strings.Repeat("abcdefgh", 9) + "\xff" + strings.Repeat("x", 13) + "\"",
		"\"" + strings.Repeat("abcdefgh", 9) + `\"` + strings.Repeat("x", 13) + "\"",
	} {
		got, err := Decode([]byte(in))
		if err != nil {
			t.Errorf("Decode(%q): %v", in, err)
			continue
		}
		want, err := stdDecode([]byte(in))
		if err != nil {
			t.Fatalf("encoding/json(%q): %v", in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%q) = %#v, encoding/json gives %#v", in, got, want)
		}
	}
}

func TestDecodeEmptyContainersAreNotNil(t *testing.T) {
	v, err := Decode([]byte(`{"a":[],"b":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if a, ok := m["a"].([]any); !ok || a == nil {
		t.Errorf("a = %#v, want a non-nil empty []any", m["a"])
	}
	if b, ok := m["b"].(map[string]any); !ok || b == nil {
		t.Errorf("b = %#v, want a non-nil empty map", m["b"])
	}
}

func TestDecodeDoesNotAlias(t *testing.T) {
	in := []byte(`{"key":"value","n":12}`)
	v, err := Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = ' '
	}
	if want := map[string]any{"key": "value", "n": json.Number("12")}; !reflect.DeepEqual(v, want) {
		t.Errorf("after changing the input: %#v", v)
	}
}

func TestDecodeDuplicates(t *testing.T) {
	for _, tc := range []struct {
		in, path, key, member string
		off                   int64
	}{
		{`{"mode":"safe","mode":"rm-rf"}`, "", "mode", "mode", 15},
		{`{"a":{"b":{"x":1,"y":2,"x":3}}}`, "a.b", "x", "a.b.x", 23},
		{`{"tags":[1,2,{"k":1,"k":2}]}`, "tags[2]", "k", "tags[2].k", 20},
		{`[{},[{"a b":{"q":1,"\u0071":2}}]]`, `[1][0]["a b"]`, "q", `[1][0]["a b"].q`, 19},
		{`{"":1,"":2}`, "", "", `[""]`, 6},
		{"{\"\xff\":1,\"\xfe\":2}", "", "\ufffd", "[\"\ufffd\"]", 7},
		// The first duplicate in document order is named.
		{`{"a":{"x":1,"y":{"z":1,"z":2},"x":2}}`, "a.y", "z", "a.y.z", 23},
		// A duplicate of an exact name only: case matters.
		{`{"mode":1,"MODE":2,"mode":3}`, "", "mode", "mode", 19},
	} {
		v, err := Decode([]byte(tc.in))
		var de *DuplicateError
		if !errors.As(err, &de) {
			t.Errorf("Decode(%s) = %v, %v; want a *DuplicateError", tc.in, v, err)
			continue
		}
		if v != nil || de.Path != tc.path || de.Key != tc.key || de.MemberPath() != tc.member || de.Offset != tc.off {
			t.Errorf("Decode(%s): path %q key %q member %q offset %d; want %q %q %q %d",
				tc.in, de.Path, de.Key, de.MemberPath(), de.Offset, tc.path, tc.key, tc.member, tc.off)
		}
	}
	if _, err := Decode([]byte(`{"mode":1,"MODE":2}`)); err != nil {
		t.Errorf("names that differ in case are two members: %v", err)
	}
}

func TestDuplicateErrorText(t *testing.T) {
	_, err := Decode([]byte(`{"a":{"b":{"x":1,"x":2}}}`))
	if want := `duplicate member "x" in object a.b at byte offset 17`; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %s", err, want)
	}
	_, err = Decode([]byte(`{"x":1,"x":2}`))
	if want := `duplicate member "x" at byte offset 7`; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %s", err, want)
	}
}

func TestDecodeSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		in, msg string
		off     int64
	}{
		{``, "unexpected end of JSON input", 0},
		{`   `, "unexpected end of JSON input", 3},
		{`{"a":`, "unexpected end of JSON input", 5},
		{`{"a":1`, "unexpected end of JSON input", 6},
		{`"abc`, "unexpected end of JSON input", 4},
		{`[1,`, "unexpected end of JSON input", 3},
		{`tru`, "unexpected end of JSON input", 3},
		{`1.`, "unexpected end of JSON input", 2},
		{`nope`, "invalid character 'o' in literal null (expecting 'u')", 1},
		{`x`, "invalid character 'x' looking for beginning of value", 0},
		{`{"a" 1}`, "invalid character '1' after object key", 5},
		{`{"a":1 "b":2}`, "invalid character '\"' after object key:value pair", 7},
		{`{"a":1,}`, "invalid character '}' looking for beginning of object key string", 7},
		{`{1:2}`, "invalid character '1' looking for beginning of object key string", 1},
		{`[1 2]`, "invalid character '2' after array element", 3},
		{`[1,]`, "invalid character ']' looking for beginning of value", 3},
		{`{"tags":[]} {}`, "invalid character '{' after top-level value", 12},
		{`01`, "invalid character '1' after top-level value", 1},
		{`-x`, "invalid character 'x' in numeric literal", 1},
		{`1.e5`, "invalid character 'e' after decimal point in numeric literal", 2},
		{`1e+`, "unexpected end of JSON input", 3},
		{`1ex`, "invalid character 'x' in exponent of numeric literal", 2},
		{"\"a\tb\"", `invalid character '\t' in string literal`, 2},
		{`"\x"`, "invalid character 'x' in string escape code", 2},
		{`"\'"`, `invalid character '\'' in string escape code`, 2},
		{`"\u12G4"`, `invalid character 'G' in \u hexadecimal character escape`, 5},
		{`"\ud800\u12G4"`, `invalid character 'G' in \u hexadecimal character escape`, 11},
		{"\u00a0{}", `invalid character 'Â' looking for beginning of value`, 0},
		{strings.Repeat("[", MaxDepth+1), "exceeded max depth of 10000 nested arrays and objects", MaxDepth},
	} {
		_, err := Decode([]byte(tc.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%q) = %v, want a *SyntaxError", tc.in, err)
			continue
		}
		if se.Msg != tc.msg || se.Offset != tc.off {
			t.Errorf("Decode(%q): %q at %d, want %q at %d", tc.in, se.Msg, se.Offset, tc.msg, tc.off)
		}
		if json.Valid([]byte(tc.in)) {
			t.Errorf("%q is valid for encoding/json", tc.in)
		}
	}
}

// TestDecodeSyntaxBeatsDuplicate: a duplicate followed by a syntax error
// is a syntax error, as for encoding/json.
func TestDecodeSyntaxBeatsDuplicate(t *testing.T) {
	_, err := Decode([]byte(`{"a":1,"a":2,}`))
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("err = %v, want a *SyntaxError", err)
	}
}

func TestDecodeMaxDepth(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := Decode([]byte(deep)); err != nil {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
	obj := strings.Repeat(`{"a":`, MaxDepth-1) + `{"b":1,"b":2}` + strings.Repeat("}", MaxDepth-1)
	_, err := Decode([]byte(obj))
	var de *DuplicateError
	if !errors.As(err, &de) || de.Path != strings.TrimSuffix(strings.Repeat("a.", MaxDepth-1), ".") {
		t.Errorf("deep duplicate: %v", err)
	}
}
