package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// FuzzDecode checks Decode against encoding/json on any input:
//
//   - it fails with a *SyntaxError exactly when json.Valid fails, with
//     encoding/json's message and position (encoding/json counts the
//     offending byte in its offset; at an unexpected end both give the
//     length, where encoding/json may name the space it pretends to read);
//   - on valid JSON it fails with a *DuplicateError exactly when an
//     object has a name twice (found with encoding/json's tokenizer), and
//     names the first such, by key, object path and offset;
//   - otherwise its tree is deeply equal to encoding/json's with
//     UseNumber.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"mode":"safe","MODE":"rm-rf"}`, `{"mode":"safe","mode":"rm-rf"}`,
		`{"a":{"b":[1,{"x":1,"y":[],"x":{}}]}}`, `[{"a b":{"q":1,"\u0071":2}}]`,
		`{"":0,"\u0000":1}`, "{\"\xff\":1,\"\xfe\":2}", `{"a":1,"a":2,}`,
		`"\ud800\udc00\ud800\u0041\udc00"`, "\"\xed\xa0\x80\xc3\xa9\"", `"\u12G4"`,
		`-0.0e+00`, `01`, `1.`, `-`, `1e`, `tru`, `nul`, `[1,]`, `{"a" 1}`, ` `, ``,
		`{"data":"` + strings.Repeat("abcdefg ", 5) + `\n"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Valid(b) != json.Valid(b) {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, Valid(b), json.Valid(b))
		}
		v, err := Decode(b)
		if !json.Valid(b) {
			checkSyntaxError(t, b, err)
			return
		}
		dup := firstDuplicate(t, b)
		if dup != nil {
			var de *DuplicateError
			if !errors.As(err, &de) {
				t.Fatalf("Decode(%q) = %v, %v; want %v", b, v, err, dup)
			}
			if de.Key != dup.Key || de.Path != dup.Path || de.Offset != dup.Offset || v != nil {
				t.Fatalf("Decode(%q): %v (path %q), want %v (path %q)", b, de, de.Path, dup, dup.Path)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode(%q): %v", b, err)
		}
		want, err := stdDecode(b)
		if err != nil {
			t.Fatalf("encoding/json(%q): %v", b, err)
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("Decode(%q) = %#v, encoding/json gives %#v", b, v, want)
		}
	})
}

// checkSyntaxError compares err with encoding/json's error for invalid b.
func checkSyntaxError(t *testing.T, b []byte, err error) {
	t.Helper()
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("Decode(%q) = %v, want a *SyntaxError", b, err)
	}
	var v any
	var want *json.SyntaxError
	if !errors.As(json.Unmarshal(b, &v), &want) {
		t.Fatalf("encoding/json gives no SyntaxError for %q", b)
	}
	switch {
	case se.Offset == int64(len(b)):
		if want.Offset != int64(len(b)) || want.Error() != se.Msg && !strings.HasPrefix(want.Error(), "invalid character ' '") {
			t.Fatalf("Decode(%q): %q at the end; encoding/json: %q at %d", b, se.Msg, want, want.Offset)
		}
	case strings.HasPrefix(se.Msg, "exceeded max depth"):
		if !strings.HasSuffix(want.Error(), "exceeded max depth") || want.Offset != se.Offset+1 {
			t.Fatalf("Decode(%q): %q at %d; encoding/json: %q at %d", b, se.Msg, se.Offset, want, want.Offset)
		}
	default:
		if want.Error() != se.Msg || want.Offset != se.Offset+1 {
			t.Fatalf("Decode(%q): %q at %d; encoding/json: %q at offset-after %d", b, se.Msg, se.Offset, want, want.Offset)
		}
	}
}

// firstDuplicate finds, with encoding/json's tokenizer, the first member
// name in document order that its object already has; nil when none. b
// must be valid JSON.
func firstDuplicate(t *testing.T, b []byte) *DuplicateError {
	t.Helper()
	o := &oracle{b: b, dec: json.NewDecoder(bytes.NewReader(b))}
	o.dec.UseNumber()
	if err := o.value(""); err != nil {
		t.Fatalf("tokenizing %q: %v", b, err)
	}
	return o.dup
}

// oracle walks a valid document token by token.
type oracle struct {
	b   []byte
	dec *json.Decoder
	dup *DuplicateError
}

// value reads one value at path.
func (o *oracle) value(path string) error {
	tok, err := o.dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		keys := map[string]bool{}
		for o.dec.More() {
			before := o.dec.InputOffset()
			kt, err := o.dec.Token()
			if err != nil {
				return err
			}
			k := kt.(string)
			if keys[k] && o.dup == nil {
				off := before + int64(bytes.IndexByte(o.b[before:], '"'))
				o.dup = &DuplicateError{Path: path, Key: k, Offset: off}
			}
			keys[k] = true
			if err := o.value(AppendKey(path, k)); err != nil {
				return err
			}
		}
		_, err = o.dec.Token()
	case json.Delim('['):
		for i := 0; o.dec.More(); i++ {
			if err := o.value(path + "[" + strconv.Itoa(i) + "]"); err != nil {
				return err
			}
		}
		_, err = o.dec.Token()
	}
	return err
}
