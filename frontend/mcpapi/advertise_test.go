package mcpapi_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/frontend/mcpapi"
)

// offered is what a client was offered, in a form a test compares.
type offered struct {
	toolsChanged, prompts, promptsChanged, resources, resourcesChanged, subscribe, completions bool
}

// offeredTo returns the capabilities of cs's initialize (or
// server/discover) result.
func offeredTo(cs *mcp.ClientSession) offered {
	c := cs.InitializeResult().Capabilities
	var o offered
	o.toolsChanged = c.Tools != nil && c.Tools.ListChanged
	o.prompts = c.Prompts != nil
	o.promptsChanged = o.prompts && c.Prompts.ListChanged
	o.resources = c.Resources != nil
	o.resourcesChanged = o.resources && c.Resources.ListChanged
	o.subscribe = o.resources && c.Resources.Subscribe
	o.completions = c.Completions != nil
	return o
}

// TestAdvertiseWhatIsTrue: the MCP Go SDK's client is offered
// listChanged and resources.subscribe only where it can be notified (a
// session, or a 2026-07-28 client, which listens with
// subscriptions/listen; never a stateless 2025-11-25 one), and prompts,
// resources and completions only while something serves them
// (examples/mcp-notes --rich serves all three; the calculator none),
// once the plugins are up (Sync).
func TestAdvertiseWhatIsTrue(t *testing.T) {
	stateless := mode{"stateless-2025-11-25", mcpapi.Path, "2025-11-25"}
	sessions, latest := modes[2], modes[0]
	all := offered{true, true, true, true, true, true, true}
	t.Run("catalog", func(t *testing.T) {
		r := notesRig(t)
		r.s.Sync() // the plugins are up: what is served is known
		for _, c := range []struct {
			m    mode
			want offered
		}{
			{stateless, offered{prompts: true, resources: true, completions: true}},
			{sessions, all},
			{latest, all},
		} {
			if got := offeredTo(r.connect(t, c.m, nil)); got != c.want {
				t.Errorf("%s: offered %+v, want %+v", c.m.name, got, c.want)
			}
		}
	})
	t.Run("tools only", func(t *testing.T) {
		r := newRig(t, nil, mcpapi.Config{}, "./plugins/calculator")
		r.s.Sync()
		for _, c := range []struct {
			m    mode
			want offered
		}{
			{stateless, offered{}},
			{sessions, offered{toolsChanged: true}},
			{latest, offered{toolsChanged: true}},
		} {
			if got := offeredTo(r.connect(t, c.m, nil)); got != c.want {
				t.Errorf("%s: offered %+v, want %+v", c.m.name, got, c.want)
			}
		}
	})
	t.Run("before the first start", func(t *testing.T) {
		// Without Sync what is served is not known yet: everything the
		// host has is offered (but listChanged without a session).
		r := newRig(t, nil, mcpapi.Config{}, "./plugins/calculator")
		if got := offeredTo(r.connect(t, sessions, nil)); got != all {
			t.Errorf("offered %+v, want %+v", got, all)
		}
		if got, want := offeredTo(r.connect(t, stateless, nil)), (offered{prompts: true, resources: true, completions: true}); got != want {
			t.Errorf("stateless: offered %+v, want %+v", got, want)
		}
	})
}
