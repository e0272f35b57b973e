package clientview_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi/clientview"
	"github.com/opentool-host/opentool-host/host"
)

// noLists is a front end whose requests have no session id and whose
// servers list the shared tools.
type noLists struct{}

func (noLists) Changed() <-chan struct{} { return nil }
func (noLists) List(context.Context, *mcp.ServerSession, string, string) map[string]json.RawMessage {
	return nil
}
func (noLists) Kept(*mcp.ServerSession) *clientview.Lists { return nil }

// viewSink keeps a view from the stack, as a call's context does.
var viewSink host.CallView

// TestViewAllocations: the view a client session's tools/call carries
// costs two allocations (the view and its function), not three (a lock,
// a map and the closure holding them): it is made for every call, and a
// call of a plugin's tool, or of a shared server's, never asks for a
// list.
func TestViewAllocations(t *testing.T) {
	vs := clientview.New(noLists{}, nil)
	if n := testing.AllocsPerRun(100, func() { viewSink = vs.View(nil) }); n > 2 {
		t.Errorf("View: %v allocations, want at most 2", n)
	}
}
