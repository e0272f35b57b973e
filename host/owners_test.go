package host

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
)

// TestRememberedOwnerClaimsFirst: a name nobody holds goes to its
// remembered owner although another plugin sorts first; a name nobody
// remembers goes by plugin name; the other declarer is served prefixed.
func TestRememberedOwnerClaimsFirst(t *testing.T) {
	files, aaa := fixture("files", "read_text", "list"), fixture("aaa", "read_text", "list")
	offers := []supervise.Offer{offerOf(files, core.StateReady), offerOf(aaa, core.StateReady)}
	sortOffers(offers)
	known := &nameOwners{last: map[string]string{"read_text": "files"}}
	rt := buildRoutes(offers, map[string]claim{}, true, nil, known)
	if p, _ := servedBy(rt, "read_text"); p != "files" {
		t.Errorf("read_text served by %q, want files (remembered)", p)
	}
	if p, target := servedBy(rt, "aaa__read_text"); p != "aaa" || target != "read_text" {
		t.Errorf("aaa__read_text served by %q as %q, want aaa's read_text", p, target)
	}
	if p, _ := servedBy(rt, "list"); p != "aaa" {
		t.Errorf("list served by %q, want aaa (first by name, not remembered)", p)
	}
}

// TestOwnersFileRoundTripAndHostile: the owners a host claims are written
// under the state folder's parent and read by the next host on the same
// folder; a malformed file, or one written for another folder, is logged
// and remembers nothing (a file cannot hand a name to a plugin it was not
// written for).
func TestOwnersFileRoundTripAndHostile(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	newHost := func() *Host {
		h, err := New(core.Config{Dir: dir, StateDir: state, Logger: hclog.NewNullLogger(), NoCgroups: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(t.Context()) })
		return h
	}
	h := newHost()
	notes := fixture("notes", "echo")
	offers := []supervise.Offer{offerOf(notes, core.StateReady)}
	claims := map[string]claim{"echo": {owner: notes.p, fn: "echo"}, "x__echo": {owner: notes.p, fn: "echo"}}
	h.known.save(h, offers, claims)
	if got := newHost().known.remembered("echo"); got != "notes" {
		t.Fatalf("the next host remembers echo's owner as %q, want notes", got)
	}
	if got := newHost().known.remembered("x__echo"); got != "" {
		t.Errorf("a prefixed name is remembered (%q)", got)
	}
	for _, body := range []string{`{"dir":"` + dir + `","owners":{"echo":"notes"},"extra":1}`, `not json`, `{"dir":"/elsewhere","owners":{"echo":"evil"}}`} {
		if err := os.WriteFile(h.known.path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := newHost().known.remembered("echo"); got != "" {
			t.Errorf("%s: echo remembered as %q, want nothing", body, got)
		}
	}
	if !strings.HasPrefix(filepath.Base(h.known.path), "owners-") || filepath.Dir(h.known.path) != state {
		t.Errorf("owners file at %s, want %s/owners-*.json", h.known.path, state)
	}
}

// TestProvisionalHoldsUncertainNames: while plugins still load their
// documents, a provisional table serves a plain name only when no plugin
// still loading can end up owning it: not its remembered owner, and none
// sorting before the plugin up that declares it. A name owned before
// the build, one given to its remembered owner, and a prefixed name are
// served at once.
func TestProvisionalHoldsUncertainNames(t *testing.T) {
	loading := func(name string) supervise.Offer {
		return supervise.Offer{P: fixture(name).p, State: core.StateStarting}
	}
	cases := []struct {
		name       string
		offers     []supervise.Offer
		kept       map[string]string // name → owner before the build
		remembered map[string]string
		pending    []string
		served     map[string]string // name → plugin
	}{
		{name: "remembered owner still loading",
			offers:     []supervise.Offer{offerOf(fixture("aaa", "stats", "only"), core.StateReady), loading("zzz")},
			remembered: map[string]string{"stats": "zzz"},
			pending:    []string{"stats"}, served: map[string]string{"only": "aaa"}},
		{name: "a plugin sorting first still loading",
			offers:  []supervise.Offer{loading("aaa"), offerOf(fixture("bbb", "x"), core.StateReady)},
			pending: []string{"x"}},
		{name: "a plugin sorting later still loading",
			offers: []supervise.Offer{offerOf(fixture("aaa", "x"), core.StateReady), loading("bbb")},
			served: map[string]string{"x": "aaa"}},
		{name: "remembered owner up",
			offers:     []supervise.Offer{loading("aaa"), offerOf(fixture("bbb", "x"), core.StateReady)},
			remembered: map[string]string{"x": "bbb"},
			served:     map[string]string{"x": "bbb"}},
		{name: "owned before the build",
			offers: []supervise.Offer{loading("aaa"), offerOf(fixture("bbb", "x"), core.StateReady)},
			kept:   map[string]string{"x": "bbb"},
			served: map[string]string{"x": "bbb"}},
		{name: "a prefixed duplicate stays",
			offers:  []supervise.Offer{loading("aaa"), offerOf(fixture("bbb", "x"), core.StateReady), offerOf(fixture("ccc", "x"), core.StateReady)},
			pending: []string{"x"},
			served:  map[string]string{"ccc__x": "ccc"}},
		{name: "nothing loading",
			offers:     []supervise.Offer{offerOf(fixture("aaa", "x"), core.StateReady), offerOf(fixture("bbb", "y"), core.StateFailed)},
			remembered: map[string]string{"x": "bbb"},
			served:     map[string]string{"x": "aaa"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sortOffers(c.offers)
			kept := map[string]claim{}
			for name, owner := range c.kept {
				for _, o := range c.offers {
					if o.P.Name() == owner {
						kept[name] = claim{owner: o.P, fn: name}
					}
				}
			}
			known := &nameOwners{last: c.remembered}
			if known.last == nil {
				known.last = map[string]string{}
			}
			rt := buildRoutes(c.offers, maps.Clone(kept), true, nil, known)
			rt.holdUncertain(c.offers, kept, known)
			for _, name := range c.pending {
				if !rt.pending[name] {
					t.Errorf("%s not pending", name)
				}
				if p, _ := servedBy(rt, name); p != "" {
					t.Errorf("%s served by %s while its owner is not known", name, p)
				}
				for _, r := range rt.order {
					if r.fn.Name == name {
						t.Errorf("%s listed while pending", name)
					}
				}
			}
			for name, want := range c.served {
				if p, _ := servedBy(rt, name); p != want {
					t.Errorf("%s served by %q, want %q", name, p, want)
				}
			}
			if len(rt.pending) != len(c.pending) {
				t.Errorf("pending %v, want %v", rt.pending, c.pending)
			}
		})
	}
}

// TestOwnersFilePluginNames: the file of each plugin name is remembered
// by its base name in the folder; a remembered name that is not a plain
// file name (a path out of the folder) is dropped when read.
func TestOwnersFilePluginNames(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	h, err := New(core.Config{Dir: dir, StateDir: state, Logger: hclog.NewNullLogger(), NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(t.Context()) })
	abs, _ := filepath.Abs(dir)
	body := `{"dir":"` + abs + `","owners":{},"plugins":{"vault":"vault.mcp.json","evil":"../../etc/passwd","dot":".."}}`
	if err := os.WriteFile(h.known.path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	h2, err := New(core.Config{Dir: dir, StateDir: state, Logger: hclog.NewNullLogger(), NoCgroups: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h2.Close(t.Context()) })
	if got := h2.known.file("vault"); got != "vault.mcp.json" {
		t.Errorf("vault remembered as %q, want vault.mcp.json", got)
	}
	for _, name := range []string{"evil", "dot"} {
		if got := h2.known.file(name); got != "" {
			t.Errorf("%s remembered as %q, want nothing", name, got)
		}
	}
	if got := h2.owners()["vault"]; got != filepath.Join(dir, "vault.mcp.json") {
		t.Errorf("owners()[vault] = %q", got)
	}
}
