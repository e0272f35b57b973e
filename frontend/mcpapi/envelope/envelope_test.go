package envelope_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
)

// post is a POST to /mcp of body from a client of revision version.
func post(body, version string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	if version != "" {
		r.Header.Set("Mcp-Protocol-Version", version)
	}
	return r
}

// TestCheck: each refusal of the envelope check with its status and
// code, and a body it passes read as its message and put back whole.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, body, version string
		code                int // 0: passes
	}{
		{"not JSON", `{"jsonrpc":`, "", -32700},
		{"member twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, "", -32600},
		{"names differing in case", `{"jsonrpc":"2.0","id":1,"method":"ping","METHOD":"x"}`, "", -32600},
		{"params member twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}`, "", -32602},
		{"batch over the limit", `[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","method":"c"}]`, "", -32600},
		{"batch of a revision without", `[{"jsonrpc":"2.0","method":"a"}]`, "2025-06-18", -32600},
		{"batch within the limit", `[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]`, "2025-03-26", 0},
	} {
		_, e := envelope.Check(post(c.body, c.version), 1<<20, 2)
		switch {
		case c.code == 0 && e != nil:
			t.Errorf("%s: refused: %+v", c.name, e)
		case c.code != 0 && (e == nil || e.Code != c.code || e.Status != http.StatusBadRequest && c.code != -32700):
			t.Errorf("%s: %+v, want code %d", c.name, e, c.code)
		}
	}

	const body = `{"jsonrpc":"2.0","id":"x","method":"notifications/cancelled","params":{"requestId":7,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	r := post(body, "")
	m, e := envelope.Check(r, 1<<20, 2)
	if e != nil || m == nil {
		t.Fatalf("Check: %v, %+v", m, e)
	}
	if m.Method != "notifications/cancelled" || string(m.ID) != `"x"` || string(m.RequestID) != "7" || m.Version != "2026-07-28" || !m.Call() {
		t.Errorf("message %+v", m)
	}
	if again, _ := io.ReadAll(r.Body); string(again) != body {
		t.Errorf("body put back as %q", again)
	}
}

// TestRequestIDs: the requests a body carries, each by id (null for
// none), notifications left out.
func TestRequestIDs(t *testing.T) {
	ids, batch := envelope.RequestIDs([]byte(`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","method":"tools/list"}]`), 4)
	if !batch || len(ids) != 2 || string(ids[0]) != "3" || string(ids[1]) != "null" {
		t.Errorf("ids %q, batch %v", ids, batch)
	}
}
