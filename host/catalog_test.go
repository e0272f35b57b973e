package host

import (
	"testing"

	"github.com/opentool-host/opentool-host/host/core"
	"github.com/opentool-host/opentool-host/host/supervise"
)

// Catalog ownership follows the functions' rules: sticky owners, free
// keys to the first plugin by name, a duplicate prompt prefixed (with
// PrefixCollisions) and a duplicate URI refused; templates match URIs.
func TestBuildCatalog(t *testing.T) {
	cat := func(js string) *supervise.Catalog {
		c, err := supervise.ParseCatalog([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sv := &supervise.Supervisor{Cfg: &core.Config{}}
	a, b := supervise.NewPlugin(sv, "a", ""), supervise.NewPlugin(sv, "b", "")
	ca := cat(`{"resources":[{"uri":"x://1","name":"one"}],"resourceTemplates":[{"uriTemplate":"x://item/{id}","name":"item"}],"prompts":[{"name":"p"}],"completions":true}`)
	cb := cat(`{"resources":[{"uri":"x://1","name":"one"},{"uri":"x://2","name":"two"}],"prompts":[{"name":"p"}]}`)
	claims := map[string]*supervise.Plugin{}
	t1 := buildCatalog([]supervise.Offer{{P: a, State: core.StateReady, Cat: ca}, {P: b, State: core.StateReady, Cat: cb}}, claims, true)
	if r := t1.resource("x://1"); r == nil || r.plugin != a {
		t.Fatalf("x://1 served by %v, want a", r)
	}
	if r := t1.resource("x://2"); r == nil || r.plugin != b {
		t.Fatalf("x://2 served by %v, want b", r)
	}
	if r := t1.resource("x://item/7"); r == nil || r.kind != supervise.CatTemplate || r.plugin != a {
		t.Fatalf("x://item/7 matched %v, want a's template", r)
	}
	if r := t1.byKey[catKey(supervise.CatPrompt, "b__p")]; r == nil || r.target != "p" || string(r.raw) != `{"name":"b__p"}` {
		t.Fatalf("b's duplicate prompt: %+v", r)
	}
	if len(t1.conflicts) != 2 {
		t.Fatalf("conflicts %+v, want x://1 refused and p prefixed", t1.conflicts)
	}
	// b restarts first next time: a keeps what it owns.
	t2 := buildCatalog([]supervise.Offer{{P: b, State: core.StateReady, Cat: cb}, {P: a, State: core.StateReady, Cat: ca}}, claims, false)
	if r := t2.resource("x://1"); r.plugin != a {
		t.Fatalf("after a rebuild x://1 is %s's", r.plugin.Name())
	}
	if r := t2.byKey[catKey(supervise.CatPrompt, "b__p")]; r != nil {
		t.Fatalf("without PrefixCollisions the duplicate prompt is served as %s", r.key)
	}
	// a failed: its keys go to b.
	t3 := buildCatalog([]supervise.Offer{{P: a, State: core.StateFailed, Cat: ca}, {P: b, State: core.StateReady, Cat: cb}}, claims, false)
	if r := t3.resource("x://1"); r == nil || r.plugin != b {
		t.Fatalf("a failed: x://1 served by %v, want b", r)
	}
	if r := t3.resource("x://item/7"); r != nil {
		t.Fatalf("a failed: its template still matches")
	}
}
