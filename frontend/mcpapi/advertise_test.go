package mcpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/declared"
	"github.com/opentool-host/opentool-host/frontend/mcpapi"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/testkit"
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

// TestAdvertisePerKey: on /mcp, a key that may see only the calculator
// (tools only) is not offered the prompts and resources of mcp-notes,
// which it cannot see; a key that may see everything is.
func TestAdvertisePerKey(t *testing.T) {
	notes := testkit.Build(t, "./examples/mcp-notes")
	r := newRig(t, func(c *core.Config) {
		c.Declared = declared.Serve
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"command": notes, "args": []string{"--rich"}}}})
		if err := os.WriteFile(filepath.Join(c.Dir, "notes.mcp.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}, mcpapi.Config{}, "./plugins/calculator")
	r.s.Sync()
	guard := guardOf(t, calcAndAllKeys)
	mux := http.NewServeMux()
	mux.Handle(mcpapi.Path, r.s.Handler(mcpapi.HTTPOptions{Sessions: true}))
	url := testkit.Serve(t, guard.Middleware(mux))
	for _, c := range []struct {
		key                string
		prompts, resources bool
	}{
		{"calc-key", false, false},
		{"all-key", true, true},
	} {
		for _, protocol := range []string{"2025-11-25", ""} {
			tr := &mcp.StreamableClientTransport{Endpoint: url + mcpapi.Path, HTTPClient: &http.Client{Transport: bearer(c.key)}, MaxRetries: -1}
			got := offeredTo(connectWith(t, tr, protocol, nil))
			if got.prompts != c.prompts || got.resources != c.resources {
				t.Errorf("%s, protocol %q: offered prompts %v, resources %v; want %v, %v", c.key, protocol, got.prompts, got.resources, c.prompts, c.resources)
			}
		}
	}
}

// calcAndAllKeys is a keys file of two keys: calc-key, which may call
// the calculator only, and all-key, which may call everything.
const calcAndAllKeys = `{"keys":[{"name":"calc","key":"calc-key","allow":["plugin:calculator"]},{"name":"all","key":"all-key","allow":["*"]}]}`

// guardOf returns the key guard of the keys file body (access.Config.File).
func guardOf(t *testing.T, body string) *access.Guard {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	guard, err := access.New(access.Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	return guard
}
