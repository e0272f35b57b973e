package mcpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/frontend/mcpapi/tasklayer"
)

// TestCallRequestAsDecodeMessage: callRequest gives every body that
// passes envelope.Check the request jsonrpc.DecodeMessage gives (method,
// id, params), read from the members for a plain tools/call and decoded
// for every other, and reports false where DecodeMessage gives no
// request.
func TestCallRequestAsDecodeMessage(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":123456789012345,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1234567890123456789,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"abc","method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"a\u00e9","method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"\u0061","method":"tools/call","params":{"name":"x"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"é\",\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}",
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a\"b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`,
		`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{}}`,
		`{"id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":{}}`,
		` { "jsonrpc" : "2.0" , "id" : 5 , "method" : "tools/call" , "params" : { "name" : "x" } } `,
		`{"params":{"name":"x","arguments":{"id":2,"method":"y"}},"method":"tools/call","id":3,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":007,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{}}`,
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader([]byte(body)))
		m, e := envelope.Check(r, 1<<20, 10)
		if e != nil {
			continue // refused before the fast path
		}
		if envelope.Checked(r) != m {
			t.Fatalf("%s: Checked gives another message than Check", body)
		}
		got, gotOK := callRequest([]byte(body), m)
		msg, err := jsonrpc.DecodeMessage([]byte(body))
		want, wantOK := msg.(*jsonrpc.Request)
		if err != nil {
			wantOK = false
		}
		if gotOK != wantOK {
			t.Errorf("%s: callRequest ok %v, DecodeMessage %v (%v)", body, gotOK, wantOK, err)
			continue
		}
		if !gotOK {
			continue
		}
		if got.Method != want.Method || got.ID != want.ID || !reflect.DeepEqual(got.ID.Raw(), want.ID.Raw()) || !bytes.Equal(got.Params, want.Params) {
			t.Errorf("%s: callRequest %q %#v %s, DecodeMessage %q %#v %s", body, got.Method, got.ID.Raw(), got.Params, want.Method, want.ID.Raw(), want.Params)
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
