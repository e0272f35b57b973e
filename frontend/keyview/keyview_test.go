package keyview_test

import (
	"context"
	"slices"
	"testing"

	"github.com/opentool-host/opentool-host/frontend/keyview"
	"github.com/opentool-host/opentool-host/host"
	"github.com/opentool-host/opentool-host/host/access"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// source serves the host's two tool search functions and five of two
// plugins, with a tool search threshold.
type source struct{ threshold int }

func (s source) Functions() []host.FunctionInfo {
	fi := func(plugin, name string) host.FunctionInfo {
		return host.FunctionInfo{Plugin: plugin, Function: &opentool.Function{Name: name}, Builtin: plugin == ""}
	}
	return []host.FunctionInfo{fi("", "search_tools"), fi("", "call_tool"),
		fi("calc", "add"), fi("calc", "subtract"), fi("calc", "multiply"), fi("mock", "count"), fi("mock", "create")}
}

func (s source) Plugins() []supervise.PluginStatus {
	return []supervise.PluginStatus{{Name: "calc", Functions: []string{"add", "subtract", "multiply"}}, {Name: "mock", Functions: []string{"count", "create"}}}
}

func (s source) ToolSearchThreshold() int { return s.threshold }

// listed returns the listed names of the source's functions.
func listed(l keyview.Listed, src keyview.Source) []string {
	var out []string
	for _, f := range src.Functions() {
		if l.Has(f.Function.Name) {
			out = append(out, f.Function.Name)
		}
	}
	return out
}

// TestListed: a listing shows a key what it may call and the host's own
// functions; over the threshold, the host's own alone; without a
// threshold, a key that sees everything gets the unfiltered listing.
func TestListed(t *testing.T) {
	all := []string{"search_tools", "call_tool", "add", "subtract", "multiply", "count", "create"}
	own := []string{"search_tools", "call_tool"}
	for _, tc := range []struct {
		name      string
		grant     *access.Grant
		threshold int
		want      []string // nil: the unfiltered listing
		plugins   []string // of which a function is listed
	}{
		{"no keys", nil, 0, nil, []string{"calc", "mock"}},
		{"everything", access.NewGrant("all", []string{"*"}), 0, nil, []string{"calc", "mock"}},
		{"everything, under the threshold", access.NewGrant("all", []string{"*"}), 5, nil, []string{"calc", "mock"}},
		{"everything, over the threshold", access.NewGrant("all", []string{"*"}), 4, own, nil},
		{"no keys, over the threshold", nil, 4, own, nil},
		{"a plugin", access.NewGrant("k", []string{"plugin:calc"}), 0, []string{"search_tools", "call_tool", "add", "subtract", "multiply"}, []string{"calc"}},
		{"a plugin, at the threshold", access.NewGrant("k", []string{"plugin:calc"}), 3, []string{"search_tools", "call_tool", "add", "subtract", "multiply"}, []string{"calc"}},
		{"a plugin, over the threshold", access.NewGrant("k", []string{"plugin:calc"}), 2, own, nil},
		{"nothing", access.NewGrant("k", nil), 1, own, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := source{tc.threshold}
			l := keyview.Of(access.WithGrant(context.Background(), tc.grant), src).Listed()
			if l.All() != (tc.want == nil) {
				t.Fatalf("All = %v", l.All())
			}
			want := tc.want
			if want == nil {
				want = all
			}
			if got := listed(l, src); !slices.Equal(got, want) {
				t.Errorf("listed %v, want %v", got, want)
			}
			for _, p := range []string{"calc", "mock"} {
				if l.Plugin(p) != (l.All() || slices.Contains(tc.plugins, p)) {
					t.Errorf("Plugin(%s) = %v", p, l.Plugin(p))
				}
			}
		})
	}
}

// TestCalls: every key may call the host's own functions; a restricted
// key only its plugins' functions besides.
func TestCalls(t *testing.T) {
	src := source{}
	v := keyview.For(access.NewGrant("k", []string{"add"}), src)
	for fn, want := range map[string]bool{"search_tools": true, "call_tool": true, "add": true, "subtract": false, "nope": false} {
		if v.Calls(fn) != want {
			t.Errorf("Calls(%s) = %v", fn, !want)
		}
	}
	ctx := access.WithGrant(context.Background(), access.NewGrant("k", []string{"add"}))
	for _, f := range src.Functions() {
		if want := f.Builtin || f.Function.Name == "add"; keyview.MayCall(ctx, f) != want {
			t.Errorf("MayCall(%s) = %v", f.Function.Name, !want)
		}
	}
	if !keyview.For(nil, src).Calls("anything") {
		t.Error("no keys: a name is not callable")
	}
}

// TestListingOfNamesTheHostsOwn: `opentool-host list --dir` shows the
// host's own functions as served by host.BuiltinOwner, not by no one.
func TestListingOfNamesTheHostsOwn(t *testing.T) {
	l := keyview.ListingOf(source{})
	owners := map[string]string{}
	for _, f := range l.Functions {
		owners[f.Function] = f.Plugin
	}
	if owners["search_tools"] != host.BuiltinOwner || owners["call_tool"] != host.BuiltinOwner || owners["add"] != "calc" {
		t.Errorf("owners %v", owners)
	}
}

// TestGrantMayCall: a grant may call the host's own functions and the
// plugins' its patterns allow, as MayCall says of a context carrying it;
// no grant (no keys) may call everything.
func TestGrantMayCall(t *testing.T) {
	g := access.NewGrant("calc-add", []string{"add"})
	for _, f := range (source{}).Functions() {
		want := f.Builtin || f.Function.Name == "add"
		if got := keyview.GrantMayCall(g, f); got != want {
			t.Errorf("GrantMayCall(calc-add, %s) = %v, want %v", f.Function.Name, got, want)
		}
		if got := keyview.MayCall(access.WithGrant(context.Background(), g), f); got != want {
			t.Errorf("MayCall(calc-add, %s) = %v, want %v", f.Function.Name, got, want)
		}
		if !keyview.GrantMayCall(nil, f) {
			t.Errorf("GrantMayCall(nil, %s) = false, want true", f.Function.Name)
		}
	}
}
