package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/pluginsdk"
)

// wireResult decodes a tools/call result as the SDK client does.
func wireResult(t *testing.T, js string) *mcp.CallToolResult {
	t.Helper()
	var r mcp.CallToolResult
	if err := json.Unmarshal([]byte(js), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func TestResultJSON(t *testing.T) {
	cases := []struct {
		name, wire, want string
	}{
		{"structured with its text twin: exact numbers, member order",
			`{"content":[{"type":"text","text":"{\"z\": 1, \"id\": 12345678901234567891}"}],"structuredContent":{"z":1,"id":12345678901234567891}}`,
			`{"z":1,"id":12345678901234567891}`},
		{"structured without a twin",
			`{"content":[{"type":"text","text":"done"}],"structuredContent":{"b":2,"a":1}}`,
			`{"a":1,"b":2}`},
		{"structured twin that differs is not used",
			`{"content":[{"type":"text","text":"{\"a\":2}"}],"structuredContent":{"a":1}}`,
			`{"a":1}`},
		{"structured array", `{"content":[],"structuredContent":[1,2]}`, `{"result":[1,2]}`},
		{"structured string", `{"content":[],"structuredContent":"x"}`, `{"result":"x"}`},
		{"text blocks",
			`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`,
			`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"text":"a\nb"}`},
		{"an image and no text",
			`{"content":[{"type":"image","data":"AAEC","mimeType":"image/png"}]}`,
			`{"content":[{"type":"image","mimeType":"image/png","data":"AAEC"}],"text":""}`},
		{"no content", `{"content":[]}`, `{"content":[],"text":""}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := resultJSON(wireResult(t, tc.wire))
			if err != nil || string(b) != tc.want {
				t.Fatalf("got %s, %v; want %s", b, err, tc.want)
			}
		})
	}
}

// TestCallResultWithoutStructured: a result without structuredContent
// goes on as the server sent it, whatever its text (a text "null" once
// gained "structuredContent":null), and costs no JSON scan of the text.
func TestCallResultWithoutStructured(t *testing.T) {
	for _, text := range []string{"null", "{}", `{"a":1}`, "plain words"} {
		wire := `{"content":[{"type":"text","text":` + string(must(json.Marshal(text))) + `}]}`
		in := wireResult(t, wire)
		got, err := callResult(in, false)
		if err != nil || got.StructuredContent != nil {
			t.Fatalf("text %q: callResult = %+v, %v; want no structuredContent", text, got, err)
		}
		if b := must(json.Marshal(got)); string(b) != wire {
			t.Fatalf("text %q: encoded %s, want %s", text, b, wire)
		}
	}
	res := wireResult(t, `{"content":[{"type":"text","text":"hello, not JSON"}]}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = callResult(res, false) }); n != 0 {
		t.Fatalf("callResult of a text result allocates %v times, want 0", n)
	}
}

// must is v, failing on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestResultErrors(t *testing.T) {
	cases := []struct {
		name, wire string
		code       int
		msg        string
	}{
		{"isError", `{"content":[{"type":"text","text":"no note 9"},{"type":"text","text":"try list_notes"}],"isError":true}`, 500, "no note 9\ntry list_notes"},
		{"isError without text", `{"content":[],"isError":true}`, 500, "the MCP tool reported an error without text"},
		{"input required", `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{}}}}`, 500, "the MCP tool asked the client for input (elicitation or sampling), which opentool-host cannot give"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resultJSON(wireResult(t, tc.wire))
			var pe *pluginsdk.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Message != tc.msg {
				t.Fatalf("err = %v, want %d %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestCallError(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		code int
		msg  string
	}{
		{"invalid params", context.Background(), fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "title must not be empty"}), 400, "title must not be empty"},
		{"other JSON-RPC error", context.Background(), &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "boom"}, 500, `MCP server "s": tool "t": boom (JSON-RPC error -32603)`},
		{"cancelled", done, context.Canceled, 500, `MCP server "s": tool "t": context canceled (notifications/cancelled sent)`},
		{"connection closed", context.Background(), fmt.Errorf("%w: calling \"tools/call\": EOF", mcp.ErrConnectionClosed), 500, `MCP server "s": tool "t": the connection closed (the server exited?): connection closed: calling "tools/call": EOF`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pe *pluginsdk.Error
			if err := callError(tc.ctx, "s", "t", tc.err); !errors.As(err, &pe) || pe.Code != tc.code || pe.Message != tc.msg {
				t.Fatalf("got %v, want %d %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestRawArgs(t *testing.T) {
	for in, want := range map[string]string{"": "{}", " null ": "{}", `{"a":1}`: `{"a":1}`} {
		if got := string(rawArgs([]byte(in))); got != want {
			t.Errorf("rawArgs(%q) = %s, want %s", in, got, want)
		}
	}
}
