package jsonrpc

import "testing"

func TestDecodeRequestRefusals(t *testing.T) {
	for _, tc := range []struct {
		body, msg, id string // id: the id returned with the error
	}{
		{`{"jsonrpc":"2.0","method":"add","method":"rm","id":1}`, `invalid request: duplicate member "method"`, `1`},
		{`{"jsonrpc":"2.0","method":"add","params":{"a":1},"params":{"a":2},"id":"x"}`, `invalid request: duplicate member "params"`, `"x"`},
		{`{"jsonrpc":"2.0","jsonrpc":"2.0","method":"add","id":1}`, `invalid request: duplicate member "jsonrpc"`, `1`},
		{`{"jsonrpc":"2.0","method":"add","id":1,"id":2}`, `invalid request: duplicate member "id"`, ``},
		{`{"jsonrpc":"2.0","method":"add","Method":"rm","id":1}`, `invalid request: duplicate member "method" ("method" and "Method")`, `1`},
		{`{"jsonrpc":"2.0","METHOD":"add","METHOD":"rm","id":1}`, `invalid request: duplicate member "method" ("METHOD" and "METHOD")`, `1`},
		{`{"jsonrpc":"2.0","method":"add","\u006dethod":"rm","id":1}`, `invalid request: duplicate member "method"`, `1`},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":{},\"param\u017f\":{},\"id\":1}", `invalid request: duplicate member "params" ("params" and "paramſ")`, `1`},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"id\":\"a\xffb\"}", `invalid request: "id" must be valid UTF-8`, ``},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"id\":\"\xed\xa0\x80\"}", `invalid request: "id" must be valid UTF-8`, ``},
		{`{"jsonrpc":"2.0","method":"add","id":"\ud800"}`, `invalid request: "id" must not have a lone UTF-16 surrogate escape (\ud800)`, ``},
		{`{"jsonrpc":"2.0","method":"add","id":"\uDC00\uD800"}`, `invalid request: "id" must not have a lone UTF-16 surrogate escape (\uDC00)`, ``},
		{`{"jsonrpc":"2.0","method":"add","id":"ok\ud83d\u0041"}`, `invalid request: "id" must not have a lone UTF-16 surrogate escape (\ud83d)`, ``},
		{`{"jsonrpc":"2.0","method":"add","id":true}`, `invalid request: "id" must be a string, a number or null`, ``},
	} {
		req, err := DecodeRequest([]byte(tc.body))
		if err == nil || err.Code != CodeInvalidRequest || err.Message != tc.msg {
			t.Errorf("DecodeRequest(%s) error = %+v, want -32600 %q", tc.body, err, tc.msg)
			continue
		}
		if req == nil || string(req.ID) != tc.id {
			t.Errorf("DecodeRequest(%s) id = %+v, want %q", tc.body, req, tc.id)
		}
	}
}

func TestDecodeRequestEchoableIDs(t *testing.T) {
	for _, id := range []string{`"\ud83d\ude00"`, `"\\ud800"`, `"\ufffd\uFFFD` + "\uFFFD" + `"`, `"é☃"`, `"a\"b\u0041"`, `null`, `-1.5e3`, `9007199254740993`} {
		body := `{"jsonrpc":"2.0","method":"add","id":` + id + `}`
		req, err := DecodeRequest([]byte(body))
		if err != nil || string(req.ID) != id {
			t.Errorf("DecodeRequest(%s) = %+v, %+v; want id %s echoed", body, req, err, id)
		}
	}
}
