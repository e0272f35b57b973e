package mcpapi

import "testing"

// TestIsResponseEvent: only an event carrying a JSON-RPC response, as the
// SDK encodes one, ends a call's stream.
func TestIsResponseEvent(t *testing.T) {
	for in, want := range map[string]bool{
		"event: message\nid: s_1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n":                        true,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":-1.5e3,\"error\":{\"code\":1}}\n\n":                   true,
		"data: {\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"result\":{}}\n\n":                                        true,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n":    false,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\"}\n\n":         false,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"x,\\\"result\\\":\",\"method\":\"roots/list\"}\n\n": false,
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n":                                   false,
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}":                                                           false,
		"xdata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n":                                                false,
	} {
		if got := isResponseEvent([]byte(in)); got != want {
			t.Errorf("isResponseEvent(%q) = %v, want %v", in, got, want)
		}
	}
}
