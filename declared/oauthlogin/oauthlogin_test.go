package oauthlogin

import (
	"errors"
	"slices"
	"testing"

	"golang.org/x/oauth2"
)

// TestMemoryStoreKeepsPrincipalsApart: a token is held by server and
// principal, a copy each way; Principals lists a server's holders only,
// sorted; Delete ends one without touching another.
func TestMemoryStoreKeepsPrincipalsApart(t *testing.T) {
	var s MemoryStore
	tok := &oauth2.Token{AccessToken: "a1"}
	_ = s.Put("far", "bob", &oauth2.Token{AccessToken: "b1"})
	_ = s.Put("far", "alice", tok)
	_ = s.Put("near", "carol", &oauth2.Token{AccessToken: "c1"})
	tok.AccessToken = "changed after Put"
	if got, err := s.Get("far", "alice"); err != nil || got.AccessToken != "a1" {
		t.Fatalf("alice's token: %v, %v", got, err)
	}
	if ps, _ := s.Principals("far"); !slices.Equal(ps, []string{"alice", "bob"}) {
		t.Errorf("far's principals: %q", ps)
	}
	_ = s.Delete("far", "bob")
	if _, err := s.Get("far", "bob"); !errors.Is(err, ErrNoToken) {
		t.Errorf("bob after Delete: %v, want ErrNoToken", err)
	}
	if _, err := s.Get("far", "carol"); !errors.Is(err, ErrNoToken) {
		t.Errorf("carol on far: %v, want ErrNoToken (her token is near's)", err)
	}
	if ps, _ := s.Principals("far"); !slices.Equal(ps, []string{"alice"}) {
		t.Errorf("far's principals after Delete: %q", ps)
	}
}

var _ Lister = (*MemoryStore)(nil)
