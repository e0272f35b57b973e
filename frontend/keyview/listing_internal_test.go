package keyview

import (
	"testing"

	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// TestServedNamesTheHostsOwn: `opentool-host list --url` pairs each
// function of the document with the plugin /health says serves it, the
// host's own (in no plugin's functions) with host.BuiltinOwner, and a
// function refused as a conflict with the plugin that owns it.
func TestServedNamesTheHostsOwn(t *testing.T) {
	doc := &opentool.OpenTool{Functions: []opentool.Function{{Name: "search_tools"}, {Name: "add"}, {Name: "b__add"}}}
	plugins := []supervise.PluginStatus{
		{Name: "a", Functions: []string{"add"}},
		{Name: "b", Functions: []string{"add"}, Conflicts: []supervise.Conflict{{Function: "add", ServedAs: "b__add"}}},
	}
	got := map[string]string{}
	for _, f := range served(doc, plugins) {
		got[f.Function] = f.Plugin
	}
	if got["search_tools"] != host.BuiltinOwner || got["add"] != "a" || got["b__add"] != "b" {
		t.Errorf("owners %v", got)
	}
}
