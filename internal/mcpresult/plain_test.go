package mcpresult

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/internal/strictjson"
)

// plainSeeds are results Plain passes (true) or refuses (false).
var plainSeeds = []struct {
	b    string
	want bool
}{
	{`{"content":[{"type":"text","text":"hi"}]}`, true},
	{`{"content":[]}`, true},
	{`{ "content" : [ { "text" : "a\"b\n\u00e9<&>" , "type" : "text" } ], "isError" : true }`, true},
	{`{"isError":false,"content":[{"type":"text","text":""},{"type":"text","text":"日本"}]}`, true},
	{`{"content":[{"type":"text","text":"\ud83d\ude00"}]}`, false}, // a surrogate pair: refused, though it decodes the same
	{`{"content":[{"type":"text","text":"\uD800"}]}`, false},
	{`{"content":[{"type":"text","text":"a\\ud800"}]}`, false}, // an escaped backslash: refused all the same
	{"{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}", false},
	{"{\"content\":[{\"type\":\"text\",\n\"text\":\"a\"}]}", false},
	{`{"content":[{"type":"text","text":"a","text":"b"}]}`, false},
	{`{"content":[],"content":[]}`, false},
	{`{"content":[],"isError":true,"isError":false}`, false},
	{`{"content":[{"type":"text","type":"text","text":"a"}]}`, false},
	{`{"content":[],"Content":[]}`, false},
	{`{"cont\u0065nt":[]}`, false},
	{`{"content":[]} {}`, false},
	{`{"content":[]}x`, false},
	{`{"content":[] `, false},
	{`{content:[]}`, false},
	{`{"content":[{"type":"text","text":"a"},]}`, false},
	{`{"content":[{"type":"text","text":"a"}]} `, true},
	{`{"isError":true}`, false},
	{`{"content":null}`, false},
	{`{"content":{}}`, false},
	{`{"content":[{"type":"text"}]}`, false},
	{`{"content":[{"text":"a"}]}`, false},
	{`{"content":[{"type":"text","text":7}]}`, false},
	{`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`, false},
	{`{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}`, false},
	{`{"content":[{"type":"text","text":"a","_meta":{}}]}`, false},
	{`{"content":[{"type":"text","text":"a","extra":1}]}`, false},
	{`{"content":[1]}`, false},
	{`{"content":[],"structuredContent":{"a":1}}`, false},
	{`{"content":[],"_meta":{}}`, false},
	{`{"content":[],"isError":"true"}`, false},
	{`{"content":[],"resultType":"complete"}`, false},
	{`{"content":[],"other":1}`, false},
	{`{"Content":[]}`, false},
	{`[]`, false},
	{``, false},
	{`{"content":[]`, false},
}

// TestPlain: Plain passes the plain results and refuses every other,
// allocating nothing (before, each array it read, the content and
// Valid's, was boxed as an empty []any).
func TestPlain(t *testing.T) {
	for _, c := range plainSeeds {
		if got := Plain([]byte(c.b)); got != c.want {
			t.Errorf("Plain(%s) = %v, want %v", c.b, got, c.want)
		}
	}
	b := []byte(`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"isError":false}`)
	if n := testing.AllocsPerRun(100, func() { _ = Plain(b) }); n != 0 {
		t.Errorf("Plain makes %v allocations, want 0", n)
	}
}

// FuzzPlainSameAsSDK: a result Plain passes is one the MCP SDK decodes
// and encodes back to the same JSON value (isError false being the same
// as no isError, which the SDK omits).
func FuzzPlainSameAsSDK(f *testing.F) {
	for _, c := range plainSeeds {
		f.Add([]byte(c.b))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !Plain(b) {
			return
		}
		if !strictjson.Clean(b) {
			t.Fatalf("Plain(%q), but it is not clean JSON (a member given twice, or another spelling of one)", b)
		}
		res := new(mcp.CallToolResult)
		if err := res.UnmarshalJSON(b); err != nil {
			t.Fatalf("Plain(%q), but the SDK does not decode it: %v", b, err)
		}
		out, err := res.MarshalJSON()
		if err != nil {
			t.Fatalf("Plain(%q), but the SDK does not encode it back: %v", b, err)
		}
		var in, back map[string]any
		if json.Unmarshal(b, &in) != nil || json.Unmarshal(out, &back) != nil {
			t.Fatalf("Plain(%q): not JSON objects: %s", b, out)
		}
		if in["isError"] == false {
			delete(in, "isError")
		}
		if !reflect.DeepEqual(in, back) {
			t.Errorf("Plain(%q), but the SDK gives %s", b, out)
		}
	})
}
