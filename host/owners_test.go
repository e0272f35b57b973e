package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestRememberedOwnerClaimsFirst: a name nobody holds goes to its
// remembered owner although another plugin sorts first; a name nobody
// remembers goes by plugin name; the other declarer is served prefixed.
func TestRememberedOwnerClaimsFirst(t *testing.T) {
	files, aaa := fixture("files", "read_text", "list"), fixture("aaa", "read_text", "list")
	offers := []offer{offerOf(files, StateReady), offerOf(aaa, StateReady)}
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
		h, err := New(Config{Dir: dir, StateDir: state, Logger: hclog.NewNullLogger(), NoCgroups: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close(t.Context()) })
		return h
	}
	h := newHost()
	notes := fixture("notes", "echo")
	offers := []offer{offerOf(notes, StateReady)}
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
