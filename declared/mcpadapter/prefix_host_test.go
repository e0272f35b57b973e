package mcpadapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestRelayErrorNamesTheMethodOnce: a declared MCP server (examples/
// mcp-notes' "ask") whose elicitation/create cannot reach a client (the
// caller is no MCP client) fails with a message that names the method
// once: neither the host's relay nor the server adds it a second time.
func TestRelayErrorNamesTheMethodOnce(t *testing.T) {
	h := notesHost(t, "--rich")
	res, err := h.CallResult(context.Background(), nil, "ask", []byte(`{"question":"sure?"}`))
	msg := string(res.JSON) // a plain result: the server's JSON
	if res.Decoded != nil {
		b, _ := json.Marshal(res.Decoded)
		msg = string(b)
	}
	if err != nil {
		msg = err.Error()
	}
	t.Logf("ask: %s", msg)
	if n := strings.Count(msg, "elicitation/create"); n != 1 {
		t.Errorf("the message names elicitation/create %d times, want once: %s", n, msg)
	}
}
