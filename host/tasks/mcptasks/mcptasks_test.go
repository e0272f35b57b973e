package mcptasks

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestOptInAllows: OptIn's _meta declares the extension (as it reads
// once sent) and replaces the capabilities it had; other members stay.
func TestOptInAllows(t *testing.T) {
	in := map[string]any{"progressToken": "p", MetaClientCapabilities: map[string]any{"sampling": map[string]any{}}}
	m := OptIn(in)
	if !Allows(m) || m["progressToken"] != "p" {
		t.Fatalf("OptIn = %v", m)
	}
	if Allows(in) || len(in) != 2 {
		t.Fatalf("OptIn changed its argument: %v", in)
	}
	var sent map[string]any
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, &sent); err != nil || !Allows(sent) {
		t.Fatalf("sent %s: %v", b, err)
	}
	if Allows(nil) || Allows(map[string]any{MetaClientCapabilities: map[string]any{"extensions": map[string]any{"other": map[string]any{}}}}) {
		t.Fatal("Allows without the extension")
	}
}

// TestIsMissingCapability: MissingCapability's error, however wrapped,
// and only a -32021 naming the extension.
func TestIsMissingCapability(t *testing.T) {
	if err := fmt.Errorf("calling %q: %w", "tools/call", MissingCapability("tools/call")); !IsMissingCapability(err) {
		t.Errorf("%v not recognized", err)
	}
	for _, err := range []error{
		nil,
		fmt.Errorf("-32021"),
		&jsonrpc.Error{Code: CodeMissingRequiredClientCapability, Message: "x"},
		&jsonrpc.Error{Code: CodeMissingRequiredClientCapability, Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"other":{}}}}`)},
		&jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Data: json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + Extension + `":{}}}}`)},
	} {
		if IsMissingCapability(err) {
			t.Errorf("%#v recognized", err)
		}
	}
}
