package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type point struct {
	X int `json:"x"`
	Y int `json:"y,omitempty"`
}

type Embedded struct {
	E string `json:"e"`
}

type Other struct {
	E     string `json:"e"`
	Inner point  `json:"inner"`
}

type Left struct{ Same int }

type Right struct{ Same int }

type Tagged struct {
	Same int `json:"Same"`
}

type membersIn struct {
	Embedded
	Mode    string            `json:"mode"`
	Origin  point             `json:"origin"`
	Ptr     *point            `json:"ptr,omitempty"`
	Path    []point           `json:"path"`
	Grid    [2][]*point       `json:"grid"`
	ByName  map[string]point  `json:"by_name"`
	Free    map[string]any    `json:"free"`
	Any     any               `json:"any"`
	Raw     json.RawMessage   `json:"raw"`
	When    time.Time         `json:"when"`
	Nums    []float64         `json:"nums"`
	Hidden  string            `json:"-"`
	Dash    string            `json:"-,"`
	Untag   int               // JSON name "Untag"
	BadTag  int               `json:"a\"b"` // invalid tag name: "BadTag"
	Named   Other             `json:"named"`
	Odd     map[string]*point `json:"odd key"`
	private int
}

// ambiguous has "Same" twice at depth 2, neither tagged: encoding/json
// drops the name.
type ambiguous struct {
	Left
	Right
}

// dominated has "Same" at depth 2 twice, one tagged: the tagged one wins.
type dominated struct {
	Left
	Tagged
}

func TestCheckMembers(t *testing.T) {
	in := reflect.TypeFor[membersIn]()
	for _, tc := range []struct {
		typ               reflect.Type
		json              string
		path, name, field string
		memberPath        string
	}{
		{typ: in, json: `{"e":"x","mode":"m","origin":{"x":1,"y":2},"ptr":{"x":1},"path":[{"x":1}],"grid":[[{"x":1},null],[]],
			"by_name":{"a":{"x":1}},"free":{"ANY":{"Thing":1}},"any":{"X":1},"raw":{"X":1},"when":"2020-01-01T00:00:00Z",
			"nums":[1,2],"-":"dash","Untag":1,"BadTag":2,"named":{"e":"","inner":{"x":1}},"odd key":{"k":null}}`},
		{typ: in, json: `null`},
		{typ: in, json: `{"origin":"not an object","path":{"x":1},"ptr":null}`},
		{typ: in, json: `{"mode":"safe","MODE":"rm-rf"}`, name: "MODE", field: "mode", memberPath: "MODE"},
		{typ: in, json: `{"origin":{"X":1}}`, path: "origin", name: "X", field: "x", memberPath: "origin.X"},
		{typ: in, json: `{"ptr":{"x":1,"z":2}}`, path: "ptr", name: "z", memberPath: "ptr.z"},
		{typ: in, json: `{"path":[{"x":1},{"y":2,"Y":3}]}`, path: "path[1]", name: "Y", field: "y", memberPath: "path[1].Y"},
		{typ: in, json: `{"grid":[[],[null,{"x":1,"w":1}]]}`, path: "grid[1][1]", name: "w", memberPath: "grid[1][1].w"},
		{typ: in, json: `{"by_name":{"a b":{"x":1,"q":1}}}`, path: `by_name["a b"]`, name: "q", memberPath: `by_name["a b"].q`},
		{typ: in, json: `{"odd key":{"k":{"q":1}}}`, path: `["odd key"].k`, name: "q", memberPath: `["odd key"].k.q`},
		{typ: in, json: `{"named":{"inner":{"X":1}}}`, path: "named.inner", name: "X", field: "x", memberPath: "named.inner.X"},
		{typ: in, json: `{"Hidden":"x"}`, name: "Hidden", memberPath: "Hidden"},
		{typ: in, json: `{"private":1}`, name: "private", memberPath: "private"},
		{typ: in, json: `{"Embedded":{"e":"x"}}`, name: "Embedded", memberPath: "Embedded"},
		{typ: in, json: `{"a\"b":1}`, name: `a"b`, memberPath: `["a\"b"]`},
		{typ: in, json: `{"untag":1}`, name: "untag", field: "Untag", memberPath: "untag"},
		// The smallest name is named, at each level.
		{typ: in, json: `{"zz":1,"origin":{"q":1,"p":1},"b":1}`, name: "b", memberPath: "b"},
		{typ: in, json: `{"zz":1,"origin":{"q":1,"p":1}}`, path: "origin", name: "p", memberPath: "origin.p"},
		{typ: reflect.TypeFor[ambiguous](), json: `{"Same":1}`, name: "Same", memberPath: "Same"},
		{typ: reflect.TypeFor[dominated](), json: `{"Same":1}`},
		{typ: reflect.TypeFor[*[]map[string]point](), json: `[{"k":{"x":1}},{"k":{"X":1}}]`, path: "[1].k", name: "X", field: "x", memberPath: "[1].k.X"},
		{typ: reflect.TypeFor[struct{}](), json: `{"a":1}`, name: "a", memberPath: "a"},
	} {
		v, err := Decode([]byte(tc.json))
		if err != nil {
			t.Fatalf("Decode(%s): %v", tc.json, err)
		}
		err = CheckMembers(v, tc.typ)
		if tc.memberPath == "" {
			if err != nil {
				t.Errorf("CheckMembers(%s, %v) = %v, want nil", tc.json, tc.typ, err)
			}
			continue
		}
		var ue *UnknownMemberError
		if !errors.As(err, &ue) {
			t.Errorf("CheckMembers(%s, %v) = %v, want an *UnknownMemberError", tc.json, tc.typ, err)
			continue
		}
		if ue.Path != tc.path || ue.Name != tc.name || ue.Field != tc.field || ue.MemberPath() != tc.memberPath {
			t.Errorf("CheckMembers(%s): path %q name %q field %q member %q; want %q %q %q %q",
				tc.json, ue.Path, ue.Name, ue.Field, ue.MemberPath(), tc.path, tc.name, tc.field, tc.memberPath)
		}
	}
}

// TestCheckMembersAgreesWithEncodingJSON: the names CheckMembers takes are
// exactly those encoding/json fills (with DisallowUnknownFields it
// refuses the others).
func TestCheckMembersAgreesWithEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		dst   func() any
		names []string
	}{
		{func() any { return new(membersIn) }, []string{"e", "E", "mode", "Mode", "origin", "Embedded", "Hidden", "-", "Untag", "BadTag", `a"b`, "named", "private", "odd key", "Dash"}},
		{func() any { return new(ambiguous) }, []string{"Same", "Left"}},
		{func() any { return new(dominated) }, []string{"Same", "same", "Tagged"}},
	} {
		typ := reflect.TypeOf(tc.dst()).Elem()
		for _, name := range tc.names {
			body, _ := json.Marshal(map[string]any{name: nil})
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			stdErr := dec.Decode(tc.dst())
			v, _ := Decode(body)
			err := CheckMembers(v, typ)
			if exactStd := stdErr == nil && !foldOnly(typ, name); (err == nil) != exactStd {
				t.Errorf("%v member %q: CheckMembers = %v, encoding/json = %v", typ, name, err, stdErr)
			}
		}
	}
}

func TestUnknownMemberErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    UnknownMemberError
		want string
	}{
		{UnknownMemberError{Name: "c"}, `unknown member "c"`},
		{UnknownMemberError{Path: "origin", Name: "X", Field: "x"}, `unknown member "X" in object origin (member names are case-sensitive: the field is "x")`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %s, want %s", got, tc.want)
		}
	}
}

// foldOnly reports whether name matches a field of t only when case is
// ignored (encoding/json accepts it; CheckMembers must not).
func foldOnly(t reflect.Type, name string) bool {
	info := infoOf(t)
	_, exact := info.fields[name]
	return !exact && info.folded(name) != ""
}

// TestCheckFolded: names that encoding/json would take as one member are
// refused at the envelope levels, whatever Unicode folding they use, and
// nothing below those levels is looked at.
func TestCheckFolded(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want string // "" for no error
	}{
		{`{"request":{"tool_id":"a","TOOL_ID":"b"}}`, `members "TOOL_ID" and "tool_id" of object request differ only in case`},
		{`{"request":{"tool_id":"a"},"Request":{}}`, `members "Request" and "request" differ only in case`},
		{`{"request":{"tool_id":"a","tool_\u017fd":"b"}}`, ""}, // ſ is not i
		{`{"request":{"call_ids":"a","call_id\u017f":"b"}}`, `differ only in case`},
		{`{"request":{"kind":"a","\u212aind":"b"}}`, `differ only in case`},
		{`{"request":{"input":{"a":1,"A":2}}}`, ""},
		{`{"params":{"name":"add","Name":"sub"}}`, `of object params`},
		{`[1,2]`, ""},
	} {
		v, err := Decode([]byte(c.doc))
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		err = CheckFolded(v, "request", "params")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", c.doc, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.doc, err, c.want)
		}
	}
}
