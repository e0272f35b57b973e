package envelope_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/envelope"
	"github.com/opentool-host/opentool-host/internal/strictjson"
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

// TestCheckKeepsMembers: the message Check returns (and Checked gives for
// the request after it) holds the raw members strictjson.Member reads of
// the body, on the one-scan path and on the decoding one (an escaped
// name), and the id, method, requestId and version as before.
func TestCheckKeepsMembers(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"e","task":{"ttl":1},"_meta":{"progressToken":1,"` + envelope.MetaProtocolVersion + `":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list","params":[1]}`,
		`{"jsonrpc":"2.0","id":1,"m\u0065thod":"tools/call","params":{"name":"e","_meta":{"k":1},"task":5}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	} {
		r := post(body, "")
		m, e := envelope.Check(r, 1<<20, 10)
		if e != nil || m == nil {
			t.Fatalf("%s: Check = %v, %v", body, m, e)
		}
		if envelope.Checked(r) != m {
			t.Errorf("%s: Checked is not Check's message", body)
		}
		b := []byte(body)
		for _, f := range []struct {
			name      string
			got, want []byte
		}{
			{"jsonrpc", m.JSONRPC, strictjson.Member(b, "jsonrpc")},
			{"params", m.Params, strictjson.Member(b, "params")},
			{"_meta", m.Meta, strictjson.Member(b, "params", "_meta")},
			{"task", m.Task, strictjson.Member(b, "params", "task")},
		} {
			if string(f.got) != string(f.want) || (f.got == nil) != (f.want == nil) {
				t.Errorf("%s: %s = %q, Member gives %q", body, f.name, f.got, f.want)
			}
		}
	}
	m, _ := envelope.Check(post(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"`+envelope.MetaProtocolVersion+`":"2026-07-28"}}}`, ""), 1<<20, 10)
	if m.Version != "2026-07-28" || string(m.ID) != "7" || m.Method != "tools/call" {
		t.Errorf("message %+v", m)
	}
	m, _ = envelope.Check(post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`, ""), 1<<20, 10)
	if string(m.RequestID) != `"a"` || m.ID != nil {
		t.Errorf("cancelled: %+v", m)
	}
	if envelope.Checked(post(`{}`, "")) != nil {
		t.Error("Checked before Check: a message")
	}
}
