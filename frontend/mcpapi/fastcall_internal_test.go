package mcpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
)

// TestOwnCallAsSDK: ownCall reads the bodies the host answers itself
// (own) and no other, and for each gives the id jsonrpc.DecodeMessage
// gives and the params the SDK's handler would be given (decoded here by
// encoding/json, which for these bodies, their names exact, decodes as
// the SDK's decoder does).
func TestOwnCallAsSDK(t *testing.T) {
	for _, c := range []struct {
		body string
		own  bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}`, true},
		{`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":123456789012345,"method":"tools/call","params":{"name":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":1234567890123456789,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"x"}}`, true},
		{`{"jsonrpc":"2.0","id":"a\u00e9","method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call","params":{"name":"x"}}`, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"é\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}", false},
		{`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\"b"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\u0061dd"}}`, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"caf\xe9\"}}", false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"日本"}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"x"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"s":"a\nb\u00e9"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","inputResponses":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","other":1}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":17}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{}}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p","x":1}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":[]}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, false},
		{`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{}}`, false},
		{`{"id":1,"method":"tools/call","params":{}}`, false},
		{` { "jsonrpc" : "2.0" , "id" : 5 , "method" : "tools/call" , "params" : { "name" : "x" , "arguments" : { } } } `, true},
		{`{"params":{"name":"x","arguments":{"id":2,"method":"y"}},"method":"tools/call","id":3,"jsonrpc":"2.0"}`, true},
		{`{"jsonrpc":"2.0","id":007,"method":"tools/call","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{}}`, true},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(c.body)))
		m, e := envelope.Check(r, 1<<20, 10)
		if e != nil {
			if c.own {
				t.Errorf("%s: refused by envelope.Check: %v", c.body, e.Message)
			}
			continue // refused before the fast path
		}
		if envelope.Checked(r) != m {
			t.Fatalf("%s: Checked gives another message than Check", c.body)
		}
		if m == nil {
			continue
		}
		id, params, ok := ownCall(m)
		if ok != c.own {
			t.Errorf("%s: ownCall ok %v, want %v", c.body, ok, c.own)
			continue
		}
		if !ok {
			continue
		}
		msg, err := jsonrpc.DecodeMessage([]byte(c.body))
		req, isReq := msg.(*jsonrpc.Request)
		if err != nil || !isReq || req.Method != "tools/call" {
			t.Errorf("%s: the host's own, but DecodeMessage gives %#v, %v", c.body, msg, err)
			continue
		}
		if id != req.ID || !reflect.DeepEqual(id.Raw(), req.ID.Raw()) {
			t.Errorf("%s: id %#v, DecodeMessage's %#v", c.body, id.Raw(), req.ID.Raw())
		}
		want := new(mcp.CallToolParamsRaw)
		if err := json.Unmarshal(req.Params, want); err != nil {
			t.Errorf("%s: params do not decode: %v", c.body, err)
			continue
		}
		if !reflect.DeepEqual(params, want) {
			t.Errorf("%s: params %#v, the SDK's %#v", c.body, params, want)
		}
	}
}

// TestHostHeadersCanonical: the host's own headers, which ServeHTTP
// removes by their map key (delete, not Header.Del), are in canonical
// form: a client's copy is removed whatever its case.
func TestHostHeadersCanonical(t *testing.T) {
	for _, k := range []string{tasklayer.ListenHeader, tasklayer.CoreTaskHeader} {
		if k != http.CanonicalHeaderKey(k) {
			t.Errorf("%q is not canonical", k)
		}
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set(strings.ToLower(k), "client's")
		markCoreTask(r, nil)
		delete(r.Header, tasklayer.ListenHeader)
		if v := r.Header.Values(k); len(v) != 0 {
			t.Errorf("%s left: %q", k, v)
		}
	}
}
