package oauth

import "testing"

// TestPrincipalsStayApart holds the principal names apart where one
// caller could otherwise take another's tasks and sessions: a user whose
// "sub" is a client's id against that client's token without "sub", and
// one "sub" in two realms of one host.
func TestPrincipalsStayApart(t *testing.T) {
	names := map[string]string{}
	for _, c := range []struct {
		what, iss string
		raw       map[string]any
	}{
		{"client without sub", "https://kc.example/realms/a", map[string]any{"client_id": "robot"}},
		{"user whose sub is the client's id", "https://kc.example/realms/a", map[string]any{"sub": "robot"}},
		{"the same sub in another realm", "https://kc.example/realms/b", map[string]any{"sub": "robot"}},
		{"the same sub at the host's root", "https://kc.example/", map[string]any{"sub": "robot"}},
	} {
		name := newClaims(c.iss, c.raw).Principal()
		if other, ok := names[name]; ok {
			t.Errorf("%s and %s are both %q", other, c.what, name)
		}
		names[name] = c.what
	}
	if got := newClaims("https://kc.example/realms/a/", map[string]any{"sub": "alice"}).Principal(); got != "oauth:alice@kc.example/realms/a" {
		t.Errorf("principal %q, want oauth:alice@kc.example/realms/a", got)
	}
}
