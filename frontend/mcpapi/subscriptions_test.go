package mcpapi_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
)

// notesRig is a rig serving examples/mcp-notes --rich as a declared MCP
// server with sessions per client (the default), in the host's process.
func notesRig(t *testing.T) *rig {
	bin := testkit.Build(t, "./examples/mcp-notes")
	return newRig(t, func(c *core.Config) {
		c.Declared = declared.Serve
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": bin, "args": []string{"--rich"}}}})
		if err := os.WriteFile(filepath.Join(c.Dir, "notes.mcp.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}, mcpapi.Config{})
}

// TestServerListChangedPassedOn: in the host's process (run it with
// -race), a declared server's resources/list_changed on one client's own
// session (add_note) reaches every client session, each listing its
// resources at the same time.
func TestServerListChangedPassedOn(t *testing.T) {
	r := notesRig(t)
	const clients = 3
	got := make(chan int, 10*clients)
	css := make([]*mcp.ClientSession, clients)
	for i := range clients {
		css[i] = r.connect(t, modes[2], &mcp.ClientOptions{
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { got <- i },
		})
	}
	ctx := context.Background()
	if res, err := css[0].CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"title": "t"}}); err != nil || res.IsError {
		t.Fatalf("add_note: %v, %v", res, err)
	}
	heard := map[int]bool{}
	for len(heard) < clients {
		select {
		case i := <-got:
			heard[i] = true
			go func() { _, _ = css[i].ListResources(ctx, nil) }()
		case <-time.After(10 * time.Second):
			t.Fatalf("resources/list_changed reached clients %v of %d within 10 s", heard, clients)
		}
	}
}

// TestSubscriptionsPerClientConcurrent: in the host's process (run it
// with -race), several client sessions of a per-client declared MCP
// server (examples/mcp-notes --rich) subscribe, are updated and
// unsubscribe at once, each on its own upstream session: each receives
// exactly the updates of its own touches (one per touch, of its own URI)
// and nothing of the others'.
func TestSubscriptionsPerClientConcurrent(t *testing.T) {
	r := notesRig(t)
	const clients, touches = 4, 3
	uris := []string{"notes://readme", "notes://logo"}
	css := make([]*mcp.ClientSession, clients)
	gots := make([]chan string, clients)
	for i := range clients {
		got := make(chan string, 100)
		gots[i] = got
		css[i] = r.connect(t, modes[2], &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { got <- req.Params.URI },
		})
	}
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uri, cs, got := uris[i%len(uris)], css[i], gots[i]
			ctx := context.Background()
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Errorf("client %d: subscribe: %v", i, err)
				return
			}
			for range touches {
				if out, err := touch(ctx, cs, uri); out != "subscribed: true" {
					t.Errorf("client %d: touch = %q, %v: its subscription is not its server's", i, out, err)
					return
				}
				select {
				case u := <-got:
					if u != uri {
						t.Errorf("client %d, subscribed to %s, received an update of %s", i, uri, u)
					}
				case <-time.After(10 * time.Second):
					t.Errorf("client %d: no update within 10 s", i)
					return
				}
			}
			if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
				t.Errorf("client %d: unsubscribe: %v", i, err)
			}
			if out, err := touch(ctx, cs, uri); out != "subscribed: false" {
				t.Errorf("client %d: touch after unsubscribe = %q, %v", i, out, err)
			}
			// Its own update of each touch arrived in turn: one more would be
			// another's.
			select {
			case u := <-got:
				t.Errorf("client %d received an update it did not cause: %s", i, u)
			default:
			}
			_ = cs.Close()
		}()
	}
	wg.Wait()
}

// touch calls mcp-notes' touch of uri on cs and returns its text ("" on
// an error).
func touch(ctx context.Context, cs *mcp.ClientSession, uri string) (string, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"uri": uri}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		return "", err
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil {
		return "", nil
	}
	return tc.Text, nil
}
