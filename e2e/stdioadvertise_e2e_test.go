package e2e_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/opentool-host/opentool-host/testkit"
)

// TestMCPStdioInitializeOffersWhatIsServed: on stdio, where the opening
// request arrives while the plugins start, its result offers what the
// plugins behind the host serve: a folder of a tools-only plugin
// (calculator) gets tools, and no prompts, resources or completions, by
// initialize (2025-11-25) and by server/discover (2026-07-28). Before,
// stdio's opening offered every capability the host has.
func TestMCPStdioInitializeOffersWhatIsServed(t *testing.T) {
	dir := t.TempDir()
	testkit.InstallPlugin(t, dir, "calculator", "./plugins/calculator")
	for _, version := range []string{"2025-11-25", ""} { // "": the SDK's latest, opened by server/discover
		t.Run("version="+version, func(t *testing.T) {
			var o *mcp.ClientSessionOptions
			if version != "" {
				o = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			cs, _ := connectMCPStdioAs(t, mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil), o, dir)
			caps := cs.InitializeResult().Capabilities
			if caps == nil || caps.Tools == nil {
				t.Fatalf("the opening offered %+v, want tools", caps)
			}
			if caps.Prompts != nil || caps.Resources != nil || caps.Completions != nil {
				t.Errorf("the opening offered prompts %+v, resources %+v, completions %+v; want none (calculator serves tools only)", caps.Prompts, caps.Resources, caps.Completions)
			}
		})
	}
}
