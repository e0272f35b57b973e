package opentoolapi_test

import (
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/testkit"
)

// TestExactNamesEndToEnd: the host's validator is the authority and
// matches names exactly, so a case-folded or repeated key cannot smuggle
// a value past the enum check into a pluginsdk.Func (which decodes
// exactly too).
func TestExactNamesEndToEnd(t *testing.T) {
	h := testkit.StartHost(t, nil, "./testkit/plugins/strict")
	url := testkit.Serve(t, route.Mux(opentoolapi.New(h, opentoolapi.Config{Logger: testkit.Logger(t)}).Routes()))
	for _, tc := range []struct{ params, want string }{
		{`{"mode":"safe"}`, `{"jsonrpc":"2.0","result":{"mode":"safe"},"id":1}`},
		{`{"mode":"safe","MODE":"rm -rf"}`, `"code":-32602`},
		{`{"Mode":"rm -rf"}`, `"code":-32602`},
		{`{"mode":"safe","mode":"rm -rf"}`, `"code":-32602`},
		{`{"mode":"rm -rf"}`, `"code":-32602`},
	} {
		_, body := postBody(t, url+"/opentool/call", `{"jsonrpc":"2.0","method":"run","params":`+tc.params+`,"id":1}`)
		if !strings.Contains(body, tc.want) || strings.Contains(body, `"result":{"mode":"rm -rf"}`) {
			t.Errorf("params %s: %s, want %s", tc.params, body, tc.want)
		}
	}
}
