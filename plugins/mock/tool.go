package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/opentool-host/opentool-host/pluginsdk"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// document is the reference mock tool's OpenTool document, byte for byte.
//
//go:embed opentool.json
var document []byte

// initialTexts is what the storage holds when the tool starts.
var initialTexts = []string{"Hello", "World"}

// mockTool is the reference mock tool: an in-memory list of texts addressed
// by index. It is safe for concurrent use.
type mockTool struct {
	mu      sync.Mutex
	storage []string
}

var (
	_ pluginsdk.Tool     = (*mockTool)(nil)
	_ pluginsdk.Streamer = (*mockTool)(nil)
)

// newMockTool returns a mock tool whose storage is ["Hello", "World"].
func newMockTool() *mockTool {
	return &mockTool{storage: append([]string(nil), initialTexts...)}
}

// Load implements pluginsdk.Tool: it returns the embedded document, parsed
// anew (with opentool.Parse) on each call. The error, wrapping the
// *opentool.ValidationError, reports an embedded document that is invalid.
func (m *mockTool) Load(context.Context) (*opentool.OpenTool, error) {
	doc, err := opentool.Parse(document)
	if err != nil {
		return nil, fmt.Errorf("parse embedded opentool.json: %w", err)
	}
	return doc, nil
}

// Call implements pluginsdk.Tool.
//
// Results: count {"count": N}; create {"id": index of the new text}; read
// {"text": T}; update {"result": "Update successfully."}; delete {"result":
// "Delete successfully."}. run always fails with code 500. Missing or
// ill-typed arguments and ids out of range fail with code 400; an unknown
// name with 404, as does sequentiallyRead (it streams).
func (m *mockTool) Call(_ context.Context, name string, args map[string]any) (map[string]any, error) {
	switch name {
	case "count":
		m.mu.Lock()
		defer m.mu.Unlock()
		return map[string]any{"count": len(m.storage)}, nil

	case "create":
		text, err := stringArg(args, "text")
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.storage = append(m.storage, text)
		return map[string]any{"id": len(m.storage) - 1}, nil

	case "read":
		id, err := intArg(args, "id")
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := m.checkID(id); err != nil {
			return nil, err
		}
		return map[string]any{"text": m.storage[id]}, nil

	case "update":
		id, err := intArg(args, "id")
		if err != nil {
			return nil, err
		}
		text, err := stringArg(args, "text")
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := m.checkID(id); err != nil {
			return nil, err
		}
		m.storage[id] = text
		return map[string]any{"result": "Update successfully."}, nil

	case "delete":
		id, err := intArg(args, "id")
		if err != nil {
			return nil, err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := m.checkID(id); err != nil {
			return nil, err
		}
		m.storage = append(m.storage[:id], m.storage[id+1:]...)
		return map[string]any{"result": "Delete successfully."}, nil

	case "run":
		return nil, pluginsdk.ToolFailure("run failed: the mock tool's run always fails")

	case "sequentiallyRead":
		return nil, pluginsdk.Errorf(pluginsdk.CodeNotFound, "function %q streams; call it with streamCall", name)
	}
	return nil, pluginsdk.FunctionNotFound(name)
}

// StreamCall implements pluginsdk.Streamer. sequentiallyRead sends one item
// {"data": TEXT} per stored text, in order, from a snapshot taken when the
// call starts; it stops with ctx's error when ctx ends and with send's
// error when send fails. Any other known function gives code 404 (it does
// not stream), an unknown one FunctionNotFound.
func (m *mockTool) StreamCall(ctx context.Context, name string, _ map[string]any, send func(item map[string]any) error) error {
	if name != "sequentiallyRead" {
		if _, known := nonStreaming[name]; known {
			return pluginsdk.Errorf(pluginsdk.CodeNotFound, "function %q does not stream", name)
		}
		return pluginsdk.FunctionNotFound(name)
	}
	m.mu.Lock()
	texts := append([]string(nil), m.storage...)
	m.mu.Unlock()
	for _, text := range texts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := send(map[string]any{"data": text}); err != nil {
			return err
		}
	}
	return nil
}

// nonStreaming is the set of functions served by Call.
var nonStreaming = map[string]struct{}{
	"count": {}, "create": {}, "read": {}, "update": {}, "delete": {}, "run": {},
}

// checkID returns a code-400 error when id is not an index of the storage.
// m.mu must be held.
func (m *mockTool) checkID(id int) error {
	if id < 0 || id >= len(m.storage) {
		return pluginsdk.InvalidArguments("id %d is out of range: the storage holds %d texts (ids 0 to %d)", id, len(m.storage), len(m.storage)-1)
	}
	return nil
}

// stringArg returns the string argument name; a missing, null or
// non-string value is a code-400 error.
func stringArg(args map[string]any, name string) (string, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return "", pluginsdk.InvalidArguments("missing required parameter %q", name)
	}
	s, ok := v.(string)
	if !ok {
		return "", pluginsdk.InvalidArguments("parameter %q must be a string, got %s", name, jsonType(v))
	}
	return s, nil
}

// intArg returns the integer argument name. JSON numbers arrive as float64
// (or json.Number); integral values are accepted, anything else (1.5, a
// string, a missing or null value) is a code-400 error.
func intArg(args map[string]any, name string) (int, error) {
	v, ok := args[name]
	if !ok || v == nil {
		return 0, pluginsdk.InvalidArguments("missing required parameter %q", name)
	}
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int:
		return n, nil
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, pluginsdk.InvalidArguments("parameter %q must be an integer, got %s", name, n)
		}
	default:
		return 0, pluginsdk.InvalidArguments("parameter %q must be an integer, got %s", name, jsonType(v))
	}
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<53 {
		return 0, pluginsdk.InvalidArguments("parameter %q must be an integer, got %v", name, f)
	}
	return int(f), nil
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number, int:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
