package opentoolapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
	"github.com/opentool-host/opentool-host/frontend/route"
	"github.com/opentool-host/opentool-host/testkit"
)

// startPluginsAPI starts a real host serving the plugins named (each the
// package ./plugins/NAME), serves it with opentoolapi.New on loopback and
// returns the base URL. Everything stops when the test ends.
func startPluginsAPI(t *testing.T, plugins ...string) string {
	t.Helper()
	pkgs := make([]string, len(plugins))
	for i, p := range plugins {
		pkgs[i] = "./plugins/" + p
	}
	h := testkit.StartHost(t, nil, pkgs...)
	return testkit.Serve(t, route.Mux(opentoolapi.New(h, opentoolapi.Config{Version: "1.2.3", Logger: testkit.Logger(t)}).Routes()))
}

// getBody GETs url and returns the status, headers and body.
func getBody(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// postBody POSTs body as application/json and returns the status and body.
func postBody(t *testing.T, url, body string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// rpcReply is a JSON-RPC response as these tests read it.
type rpcReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Faults []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"faults"`
		} `json:"data"`
	} `json:"error"`
}

// TestArgumentValidationEndToEnd calls the mock and calculator plugins
// through a real host and HTTP: arguments that fail the parameters get
// -32602 naming every fault, and never reach the plugin.
func TestArgumentValidationEndToEnd(t *testing.T) {
	base := startPluginsAPI(t, "mock", "calculator")
	tests := []struct {
		name        string
		method      string
		params      string // "" for none
		wantMessage string // "" for success
		wantPaths   []string
	}{
		{"create without text", "create", `{}`, `invalid params: missing required parameter "text"`, []string{"text"}},
		{"create without params", "create", ``, `invalid params: missing required parameter "text"`, []string{"text"}},
		{"read id string", "read", `{"id":"abc"}`, `invalid params: id: must be integer, got string`, []string{"id"}},
		{"update every fault", "update", `{"id":1.5,"text":7}`,
			`invalid params: id: must be integer, got number 1.5; text: must be string, got number 7`, []string{"id", "text"}},
		{"add b missing, a string", "add", `{"a":"one"}`,
			`invalid params: a: must be number, got string; missing required parameter "b"`, []string{"a", "b"}},
		{"add ok", "add", `{"a":1,"b":2}`, "", nil},
		{"read unknown parameter allowed", "read", `{"id":1,"note":"x"}`, "", nil},
		{"read ok", "read", `{"id":0}`, "", nil},
		{"count ok", "count", ``, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","method":"` + tc.method + `","id":1`
			if tc.params != "" {
				body += `,"params":` + tc.params
			}
			body += "}"
			status, resp := postBody(t, base+"/opentool/call", body)
			if status != http.StatusOK {
				t.Fatalf("HTTP %d, want 200: %s", status, resp)
			}
			var r rpcReply
			if err := json.Unmarshal([]byte(resp), &r); err != nil {
				t.Fatalf("bad response %s: %v", resp, err)
			}
			if tc.wantMessage == "" {
				if r.Error != nil {
					t.Fatalf("error %+v, want a result", r.Error)
				}
				return
			}
			if r.Error == nil || r.Error.Code != -32602 || r.Error.Message != tc.wantMessage {
				t.Fatalf("response %s\nwant error -32602 %q", resp, tc.wantMessage)
			}
			var paths []string
			for _, f := range r.Error.Data.Faults {
				paths = append(paths, f.Path)
				if !strings.Contains(tc.wantMessage, f.Message) {
					t.Errorf("fault message %q not in the error message", f.Message)
				}
			}
			if strings.Join(paths, ",") != strings.Join(tc.wantPaths, ",") {
				t.Errorf("fault paths = %v, want %v", paths, tc.wantPaths)
			}
		})
	}

	// The rejected create never reached the plugin: still two texts.
	_, resp := postBody(t, base+"/opentool/call", `{"jsonrpc":"2.0","method":"count","id":2}`)
	if !strings.Contains(resp, `"result":{"count":2}`) {
		t.Fatalf("count = %s, want 2 (invalid calls must not run)", resp)
	}
}
