package opentoolapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/opentoolapi"
)

func TestRequestLimits(t *testing.T) {
	base := startMockAPI(t, opentoolapi.Config{MaxBodyBytes: 128})

	for _, path := range []string{"/opentool/call", "/opentool/streamCall"} {
		t.Run(path, func(t *testing.T) {
			url := base + path
			big := `{"jsonrpc":"2.0","method":"create","params":{"text":"` + strings.Repeat("x", 200) + `"},"id":"big"}`
			st, h, body := postJSON(t, url, big)
			wantResponse(t, "body over the limit", st, body, http.StatusRequestEntityTooLarge,
				`{"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":"invalid request: body larger than the limit of 128 bytes"},"id":null}`)
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("413 Content-Type %q", ct)
			}

			// A body of exactly the limit is read.
			fit := `{"jsonrpc":"2.0","method":"nope","id":"` + strings.Repeat("f", 128-len(`{"jsonrpc":"2.0","method":"nope","id":""}`)) + `"}`
			if len(fit) != 128 {
				t.Fatalf("fit is %d bytes", len(fit))
			}
			if st, _, body := postJSON(t, url, fit); st != http.StatusOK || !strings.Contains(body, `"code":-32601`) {
				t.Errorf("body at the limit: HTTP %d %s, want 200 with -32601", st, body)
			}

			st, _, body = rawRequest(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"count","id":"h"}`, "Content-Type: text/html; charset=utf-8")
			wantResponse(t, "text/html", st, body, http.StatusUnsupportedMediaType,
				`{"jsonrpc":"2.0","result":{},"error":{"code":-32600,"message":"invalid request: Content-Type must be application/json, got \"text/html; charset=utf-8\""},"id":null}`)

			st, _, body = rawRequest(t, http.MethodPost, url, `{}`, "Content-Type: ;;")
			if st != http.StatusUnsupportedMediaType || !strings.Contains(body, `Content-Type must be application/json, got \";;\"`) {
				t.Errorf("malformed Content-Type: HTTP %d %s, want 415", st, body)
			}

			// text/plain and the form types are what a web page may send
			// cross-site without a preflight: refused.
			for _, ct := range []string{"text/plain; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
				st, _, body := rawRequest(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"nope","id":"c"}`, "Content-Type: "+ct)
				if st != http.StatusUnsupportedMediaType || !strings.Contains(body, `"code":-32600`) {
					t.Errorf("Content-Type %q: HTTP %d %s, want 415 with -32600", ct, st, body)
				}
			}

			// The JSON Content-Types are accepted.
			for _, ct := range []string{"application/json", "application/json; charset=utf-8", "application/json-rpc"} {
				st, _, body := rawRequest(t, http.MethodPost, url, `{"jsonrpc":"2.0","method":"nope","id":"c"}`, "Content-Type: "+ct)
				if st != http.StatusOK || !strings.Contains(body, `"code":-32601`) {
					t.Errorf("Content-Type %q: HTTP %d %s, want 200 with -32601", ct, st, body)
				}
			}
		})
	}
}
