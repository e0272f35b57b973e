package host

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
	"github.com/opentool-host/opentool-host/protocol/argcheck"
	"github.com/opentool-host/opentool-host/protocol/opentool"
)

// claimFixture is a plugin of the claims tests: its name and the
// functions its document declares.
type claimFixture struct {
	p   *supervise.Plugin
	doc *opentool.OpenTool
}

// fixture returns a plugin name declaring fns.
func fixture(name string, fns ...string) claimFixture {
	doc := &opentool.OpenTool{Info: opentool.Info{Title: name}}
	for _, fn := range fns {
		doc.Functions = append(doc.Functions, opentool.Function{Name: fn})
	}
	return claimFixture{p: supervise.NewPlugin(&supervise.Supervisor{Cfg: &core.Config{}}, name, ""), doc: doc}
}

// offerOf is f's offer in state st.
func offerOf(f claimFixture, st core.State) supervise.Offer {
	return supervise.Offer{P: f.p, State: st, Doc: f.doc, Args: make([]*argcheck.Validator, len(f.doc.Functions))}
}

// build sorts offers and builds routes over claims.
func build(claims map[string]claim, prefix bool, offers ...supervise.Offer) *routeTable {
	sortOffers(offers)
	return buildRoutes(offers, claims, prefix, nil, nil)
}

// servedBy returns the plugin serving fn in t ("" none) and the name the
// call sends.
func servedBy(t *routeTable, fn string) (plugin, target string) {
	if r, ok := t.funcs[fn]; ok {
		return r.plugin.Name(), r.target
	}
	return "", ""
}

func TestClaimsFirstBuildByName(t *testing.T) {
	files, aaa := fixture("files", "read_text", "write_file"), fixture("aaa", "read_text")
	claims := map[string]claim{}
	rt := build(claims, false, offerOf(files, core.StateReady), offerOf(aaa, core.StateReady))
	if p, _ := servedBy(rt, "read_text"); p != "aaa" {
		t.Fatalf("read_text served by %q, want aaa (first by name at the first build)", p)
	}
	wantEq(t, "conflicts", rt.conflicts, map[string][]supervise.Conflict{"files": {{Function: "read_text", Owner: "aaa"}}})
	wantEq(t, "order", len(rt.order), 2)
}

func TestClaimsLaterPluginCannotTakeOver(t *testing.T) {
	files, aaa := fixture("files", "read_text", "write_file"), fixture("aaa", "read_text", "aaa_only")
	claims := map[string]claim{}
	build(claims, false, offerOf(files, core.StateReady))

	for _, st := range []core.State{core.StateReady, core.StateStarting, core.StateRestarting, core.StateFailed} {
		rt := build(claims, false, offerOf(files, st), offerOf(aaa, core.StateReady))
		want := "files"
		if st == core.StateFailed {
			want = ""
			if rt.failed["read_text"] != files.p {
				t.Errorf("owner %s: read_text not reported failed by files", st)
			}
		}
		if p, _ := servedBy(rt, "read_text"); p != want {
			t.Errorf("owner %s: read_text served by %q, want %q", st, p, want)
		}
		if p, _ := servedBy(rt, "aaa_only"); p != "aaa" {
			t.Errorf("owner %s: aaa_only served by %q", st, p)
		}
		wantEq(t, "conflicts", rt.conflicts, map[string][]supervise.Conflict{"aaa": {{Function: "read_text", Owner: "files"}}})
	}

	// The owner's new document no longer declares the name: released.
	files2 := claimFixture{p: files.p, doc: fixture("files", "write_file").doc}
	rt := build(claims, false, offerOf(files2, core.StateReady), offerOf(aaa, core.StateReady))
	if p, _ := servedBy(rt, "read_text"); p != "aaa" || len(rt.conflicts) != 0 {
		t.Fatalf("after the owner dropped read_text: served by %q, conflicts %v", p, rt.conflicts)
	}
	// And files declaring it again comes later: aaa keeps it.
	rt = build(claims, false, offerOf(files, core.StateReady), offerOf(aaa, core.StateReady))
	if p, _ := servedBy(rt, "read_text"); p != "aaa" {
		t.Fatalf("read_text served by %q, want aaa (the owner now)", p)
	}
}

func TestClaimsReleasedWhenOwnerRemoved(t *testing.T) {
	files, aaa, bbb := fixture("files", "read_text"), fixture("aaa", "read_text"), fixture("bbb", "read_text")
	claims := map[string]claim{}
	build(claims, false, offerOf(files, core.StateReady))
	build(claims, false, offerOf(files, core.StateReady), offerOf(bbb, core.StateReady), offerOf(aaa, core.StateReady))
	rt := build(claims, false, offerOf(bbb, core.StateReady), offerOf(aaa, core.StateReady))
	if p, _ := servedBy(rt, "read_text"); p != "aaa" {
		t.Fatalf("read_text served by %q, want aaa (first by name of the remaining)", p)
	}
	wantEq(t, "conflicts", rt.conflicts, map[string][]supervise.Conflict{"bbb": {{Function: "read_text", Owner: "aaa"}}})
}

func TestClaimsPrefixCollisions(t *testing.T) {
	files, aaa := fixture("files", "read_text"), fixture("aaa", "read_text")
	claims := map[string]claim{}
	build(claims, true, offerOf(files, core.StateReady))
	rt := build(claims, true, offerOf(files, core.StateReady), offerOf(aaa, core.StateReady))
	if p, _ := servedBy(rt, "read_text"); p != "files" {
		t.Fatalf("read_text served by %q, want files", p)
	}
	p, target := servedBy(rt, "aaa__read_text")
	if p != "aaa" || target != "read_text" || rt.funcs["aaa__read_text"].fn.Name != "aaa__read_text" {
		t.Fatalf("aaa__read_text: plugin %q target %q", p, target)
	}
	if aaa.doc.Functions[0].Name != "read_text" {
		t.Fatal("the plugin's own document was renamed")
	}
	wantEq(t, "conflicts", rt.conflicts, map[string][]supervise.Conflict{"aaa": {{Function: "read_text", Owner: "files", ServedAs: "aaa__read_text"}}})

	// A later plugin declaring the prefixed name literally does not take it.
	zzz := fixture("zzz", "aaa__read_text")
	rt = build(claims, true, offerOf(files, core.StateReady), offerOf(aaa, core.StateReady), offerOf(zzz, core.StateReady))
	if p, _ := servedBy(rt, "aaa__read_text"); p != "aaa" {
		t.Fatalf("aaa__read_text served by %q, want aaa", p)
	}

	// The owner goes: aaa serves read_text itself and the prefixed name is
	// released (zzz, declaring it, now gets it).
	rt = build(claims, true, offerOf(aaa, core.StateReady), offerOf(zzz, core.StateReady))
	if p, target := servedBy(rt, "read_text"); p != "aaa" || target != "read_text" {
		t.Fatalf("read_text served by %q (%q), want aaa", p, target)
	}
	if p, _ := servedBy(rt, "aaa__read_text"); p != "zzz" {
		t.Fatalf("aaa__read_text served by %q, want zzz once aaa no longer needs it", p)
	}
}

func TestClaimsPrefixRefused(t *testing.T) {
	long := strings.Repeat("p", 60)
	files, aaa, x := fixture("files", "read_text"), fixture("aaa", "read_text"), fixture(long, "read_text")
	owner := fixture("own", "aaa__read_text")
	claims := map[string]claim{}
	build(claims, true, offerOf(files, core.StateReady), offerOf(owner, core.StateReady))
	rt := build(claims, true, offerOf(files, core.StateReady), offerOf(owner, core.StateReady), offerOf(aaa, core.StateReady), offerOf(x, core.StateReady))
	wantEq(t, "aaa conflicts (prefixed name taken)", rt.conflicts["aaa"], []supervise.Conflict{{Function: "read_text", Owner: "files"}})
	wantEq(t, "long conflicts (prefixed name too long)", rt.conflicts[long], []supervise.Conflict{{Function: "read_text", Owner: "files"}})
	if len(rt.funcs) != 2 {
		t.Fatalf("served %d functions, want read_text and aaa__read_text of their owners", len(rt.funcs))
	}
}

// TestLogConflictsOnce checks that a conflict is logged once while it
// lasts, refused ones at ERROR and prefixed ones at WARN.
func TestLogConflictsOnce(t *testing.T) {
	var out strings.Builder
	h := &Host{log: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info}), logged: map[supervise.Conflict]string{}}
	rt := &routeTable{conflicts: map[string][]supervise.Conflict{
		"aaa": {{Function: "read_text", Owner: "files"}},
		"bbb": {{Function: "read_text", Owner: "files", ServedAs: "bbb__read_text"}},
	}}
	h.logConflicts(rt)
	h.logConflicts(rt)
	logs := out.String()
	if strings.Count(logs, "[ERROR]") != 1 || strings.Count(logs, "[WARN]") != 1 || !strings.Contains(logs, "refused=aaa") {
		t.Fatalf("logs:\n%s", logs)
	}
	h.logConflicts(&routeTable{})
	h.logConflicts(rt)
	if strings.Count(out.String(), "[ERROR]") != 2 {
		t.Fatalf("a conflict that came back is not logged again:\n%s", out.String())
	}
}

// TestMCPToolOnlyFromDeclaredPlugins: an MCP server's own tool
// definition (Function.MCPTool), which /mcp serves in place of the one it
// builds, is served from a declared plugin's document (the host's own MCP
// client wrote it) and dropped from a plugin process's, renamed or not;
// the plugin's document is left as it was.
func TestMCPToolOnlyFromDeclaredPlugins(t *testing.T) {
	def := []byte(`{"name":"read_text","description":"anything"}`)
	proc, srv := fixture("proc", "read_text", "own"), fixture("srv", "read_text")
	for _, f := range []claimFixture{proc, srv} {
		for i := range f.doc.Functions {
			f.doc.Functions[i].MCPTool = def
		}
	}
	declared := offerOf(srv, core.StateReady)
	declared.Declared = true
	rt := build(map[string]claim{}, true, offerOf(proc, core.StateReady), declared)
	for name, want := range map[string]bool{"own": false, "read_text": false, "srv__read_text": true} {
		r, ok := rt.funcs[name]
		if !ok {
			t.Fatalf("%s not served", name)
		}
		if got := r.fn.MCPTool != nil; got != want {
			t.Errorf("%s (plugin %s) served with mcpTool %v, want %v", name, r.plugin.Name(), got, want)
		}
	}
	for _, f := range proc.doc.Functions {
		if string(f.MCPTool) != string(def) {
			t.Errorf("the plugin's document changed: %s mcpTool %s", f.Name, f.MCPTool)
		}
	}
}

// wantEq fails t when got != want.
func wantEq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
