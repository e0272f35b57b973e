package strictjson

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestReadHandWritten: comments and trailing commas are accepted; each
// fault says its line and column (characters, a tab one, multibyte
// UTF-8 one each) and shows the line, string values masked, with a
// caret under the column.
func TestReadHandWritten(t *testing.T) {
	type file struct {
		Name  string   `json:"name"`
		Tags  []string `json:"tags"`
		Count int      `json:"count"`
	}
	cases := []struct {
		name, in, want string
	}{
		{"comments and trailing commas", "// a file\n{\n  \"name\": \"x\", /* the name */\n  \"tags\": [\"a\", \"b\",],\n}\n", ""},
		{"missing comma", "{\n  \"name\": \"x\"\n  \"count\": 1\n}", "3:3: invalid character after object value (expecting ',' or '}')\n  \"count\": 1\n  ^"},
		{"tab and multibyte", "{\n\t\"name\": \"héllo wörld\" \"x\"\n}", "2:24: invalid character after object value (expecting ',' or '}')\n\t\"name\": \"***********\" \"*\"\n\t                      ^"},
		{"secret masked", "{\"name\": \"sk-SECRET\\n\", count: 1}", "1:25: invalid literal (a string or a member name needs double quotes)\n{\"name\": \"***********\", *****: 1}\n                        ^"},
		{"unknown member", "{\n  \"name\": \"x\",\n  \"nmae\": \"y\"\n}", "3:3: $.nmae: unknown member\n  \"nmae\": \"*\"\n  ^"},
		{"duplicate", "{\"tags\": [],\n \"tags\": []}", "2:2: $.tags: duplicate member\n \"tags\": []}\n ^"},
		{"wrong type", "{\"count\":\n  \"many\"}", "1:2: $.count: must be an integer\n{\"count\":\n ^"},
		{"not JSON", "root:x:0:0:root:/root:/bin/bash\n", "1:1: invalid literal (a string or a member name needs double quotes)"},
		{"not JSON, a character", "<?xml version=\"1.0\"?>\n", "1:1: invalid character at start of value"},
		{"unterminated comment", "{\"name\": \"x\" /* no end\n}", "1:14: a /* comment does not end\n{\"name\": \"*\" /* ** ***\n             ^"},
		{"not an object", "[1, 2,]", "1:1: must be a JSON object"},
		{"bare words and comments hidden", "{\"count\": 1, // was sk-OLD\n \"name\": sk-NEW, \"tags\": [true, null, -1.5e3]}", "2:10: invalid literal (a string or a member name needs double quotes)\n \"name\": ******, \"tags\": [true, null, -1.5e3]}\n         ^"},
		{"block comment hidden", "{/* sk-1\nsk-2 */ \"name\": 1 2}", "2:19: invalid character after object value (expecting ',' or '}')\n**** */ \"name\": 1 2}\n                  ^"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f file
			h, err := ReadHandWritten([]byte(tc.in), 1<<20)
			if err == nil {
				err = h.Decode(&f)
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestHandWrittenStandardJSON: JSON is the file with comments and
// trailing commas blanked, every other byte where it was.
func TestHandWrittenStandardJSON(t *testing.T) {
	in := "{\"a\": [1, 2,], // c\n\"b\": 3,}"
	h, err := ReadHandWritten([]byte(in), 100)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(h.JSON()), "{\"a\": [1, 2 ],     \n\"b\": 3 }"; got != want {
		t.Errorf("JSON() = %q, want %q", got, want)
	}
	tree, err := h.Tree()
	if err != nil || !reflect.DeepEqual(tree.(map[string]any)["b"], tree.(map[string]any)["b"]) {
		t.Fatal(tree, err)
	}
	if _, err := ReadHandWritten([]byte(in), 10); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("a file over the limit: %v", err)
	}
}

// TestHandWrittenBlanks: what JSON blanks, and what it leaves (a
// comment's marks inside a string are the string's).
func TestHandWrittenBlanks(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"{\"a\":1 // c\n}", "{\"a\":1     \n}"},
		{"{/* x\ny */\"a\":1}", "{    \n    \"a\":1}"},
		{`{"a":[1,2,],}`, `{"a":[1,2 ] }`},
		{"{\"a\":[1, // c\n]}", "{\"a\":[1      \n]}"},
		{`{"s":"// not a comment, /* nor this */","t":",}"}`, `{"s":"// not a comment, /* nor this */","t":",}"}`},
		{`{"s":"esc \" // still a string"}`, `{"s":"esc \" // still a string"}`},
	} {
		h, err := ReadHandWritten([]byte(tc.in), 1<<10)
		if err != nil || string(h.JSON()) != tc.want {
			t.Errorf("ReadHandWritten(%q): %v; JSON() want %q", tc.in, err, tc.want)
			continue
		}
	}
}

// TestLocatePaths: a fault's JSON path finds its member's name or its
// element in the file; a path that names nothing leaves the fault as
// it is.
func TestLocatePaths(t *testing.T) {
	in := "{\"a\": {\"b c\": [0, {\"d\": 1}]},\n \"e\": 2}"
	h, err := ReadHandWritten([]byte(in), 100)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][2]int{
		"$": {1, 1}, "$.a": {1, 2}, `$.a["b c"]`: {1, 8}, `$.a["b c"][1]`: {1, 19}, `$.a["b c"][1].d`: {1, 20}, "$.e": {2, 2},
		"$.x": {0, 0}, "$.a[0]": {0, 0}, `$.a["b c"][9]`: {0, 0}, "a.b": {0, 0}, "$[": {0, 0},
	} {
		f := h.Locate(&Fault{Path: p, Message: "m"}).(*Fault)
		if f.Line != want[0] || f.Column != want[1] {
			t.Errorf("Locate(%s) = %d:%d, want %d:%d", p, f.Line, f.Column, want[0], want[1])
		}
	}
}

// FuzzReadHandWritten: any input is read or refused with a fault at a
// line of the input, never a panic; an excerpt's caret line is no
// longer than its line.
func FuzzReadHandWritten(f *testing.F) {
	for _, s := range []string{"{}", "{\"a\": [1,],}", "{\"a\" // c\n: /* x */ \"b\\\"\"}", "{\n\t\"é\": tru}", "/*", "\"\\u00", "[\"a\n\"]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHandWritten(data, 1<<20)
		if err == nil {
			_, err = h.Tree()
		}
		var fault *Fault
		if err == nil || !errors.As(err, &fault) || fault.Line == 0 {
			return
		}
		if fault.Line > 1+strings.Count(string(data), "\n") {
			t.Fatalf("line %d past the input's end: %q", fault.Line, data)
		}
		if text, caret, ok := strings.Cut(fault.Excerpt, "\n"); ok && len([]rune(caret)) > len([]rune(text))+1 {
			t.Fatalf("caret %q past line %q", caret, text)
		}
	})
}
